"""The ingest lock belongs to the database file: symlinks and hard links to one database still allow one ingester,
and a lock path that is not a regular file is refused at once, never waited on. Real processes throughout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.lock import IngestLock, is_lock_held, lock_path_for
from tests.conftest import REPO_ROOT, ingester_env, run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, import_file, query
from tests.support.processes import start_import, wait_until

pytestmark = pytest.mark.slow

HOLD = (
    "import sys,time; from pathlib import Path; from shared.lock import IngestLock;"
    "IngestLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)"
)


def _hold(db: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=ingester_env()
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _running_bytes(db: Path) -> int:
    rows = query(db, "SELECT bytes_done FROM ingest_runs WHERE state = 'running'")
    return int(rows[0][0]) if rows else 0


def _aliases(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """Two different paths to one database: `real` and its symlink or hard link in another folder."""
    real = tmp_path / "data" / "stats.db"
    real.parent.mkdir()
    other = tmp_path / "elsewhere" / "copy.db"
    other.parent.mkdir()
    small = tmp_path / "small.mbox"
    write_mbox(small, generate_messages(count=3, body_bytes=10, seed=5))
    assert run_cli("import", small, "--db", real, "--quiet").returncode == 0
    if kind == "symlink":
        other.symlink_to(real)
    else:
        os.link(real, other)
    return real, other


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_second_path_to_the_same_database_is_refused(tmp_path: Path, kind: str) -> None:
    real, other = _aliases(tmp_path, kind)
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=5, body_bytes=10))
    holder = _hold(real)
    try:
        runs_before = query(real, "SELECT run_id, state FROM ingest_runs")
        result = run_cli("import", mbox, "--db", other)
        assert result.returncode == 75, result.stderr
        assert result.stderr.strip() == f"gmail-stats: another ingester is already running against {other}"
        assert query(real, "SELECT run_id, state FROM ingest_runs") == runs_before  # nothing was abandoned
    finally:
        holder.kill()
        holder.communicate()


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_running_import_is_not_disturbed_by_one_through_another_path(tmp_path: Path, kind: str) -> None:
    """The issue's race: the second ingester used to mark the running import abandoned (and corrupt it)."""
    real, other = _aliases(tmp_path, kind)
    mbox = tmp_path / "big.mbox"
    write_mbox(mbox, generate_messages(count=40_000, body_bytes=1200, senders=300))
    first = start_import(real, mbox, GMAIL_STATS_PARSE_WORKERS="0")
    try:
        assert wait_until(lambda: _running_bytes(real) > 0, timeout=60), "the import never got going"
        first.send_signal(signal.SIGSTOP)  # frozen mid-run, lock held: the second must contend however long
        second = start_import(other, mbox, GMAIL_STATS_PARSE_WORKERS="0")
        _, stderr = second.communicate(timeout=60)
        assert second.returncode == 75, stderr
        assert query(real, "SELECT state FROM ingest_runs ORDER BY run_id") == [("done",), ("running",)]
    finally:
        first.send_signal(signal.SIGCONT)
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert query(real, "SELECT state, outcome FROM ingest_runs ORDER BY run_id") == [("done", "complete")] * 2
    assert query(real, "PRAGMA integrity_check") == [("ok",)]
    reference = tmp_path / "reference.db"  # the same two files imported one after the other, undisturbed
    import_file(reference, tmp_path / "small.mbox")
    import_file(reference, mbox)
    assert counts_of(real) == counts_of(reference)


def test_the_lock_is_named_by_the_real_path(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    assert lock_path_for(link / "stats.db") == tmp_path / "real" / "stats.db.ingest.lock"
    assert lock_path_for(tmp_path / "dangling.db") == tmp_path / "dangling.db.ingest.lock"  # not there yet


def test_probe_agrees_through_any_alias(tmp_path: Path) -> None:
    real, other = _aliases(tmp_path, "symlink")
    with IngestLock(real):
        assert is_lock_held(other) and is_lock_held(real)
    assert not is_lock_held(other)


@pytest.mark.parametrize("what", ["fifo", "folder"])
def test_a_lock_path_that_is_not_a_file_is_refused_at_once(tmp_path: Path, what: str) -> None:
    db = tmp_path / "stats.db"
    lock = lock_path_for(db)
    if what == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=2, body_bytes=10))
    started = time.monotonic()
    result = run_cli("import", mbox, "--db", db, timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"gmail-stats: {lock} is not a regular file, so it cannot be the ingest lock file; remove it or choose --db"
    )
    assert not db.exists()
    assert not is_lock_held(db)  # the probe (viewer, `runs`) neither hangs nor claims an ingester
    assert time.monotonic() - started < 25


def test_a_database_path_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    os.mkfifo(db)
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=2, body_bytes=10))
    result = run_cli("import", mbox, "--db", db, timeout=30)
    assert (result.returncode, result.stderr.strip()) == (
        1,
        f"gmail-stats: {db} is not a regular file, so it cannot be the database; remove it or choose --db",
    )


def test_the_viewer_probe_agrees_and_never_hangs(tmp_path: Path) -> None:
    from tests.support.viewer import make_settings, viewer

    real, other = _aliases(tmp_path, "symlink")
    (tmp_path / "imports").mkdir()
    with viewer(make_settings(tmp_path, db=other)) as client:
        assert client.get("/api/status").json()["ingest_lock_held"] is False
        holder = _hold(real)
        try:
            assert client.get("/api/status").json()["ingest_lock_held"] is True  # held through the other name
        finally:
            holder.kill()
            holder.communicate()
    fifo_db = tmp_path / "fifo" / "stats.db"
    fifo_db.parent.mkdir()
    os.mkfifo(lock_path_for(fifo_db))
    with viewer(make_settings(tmp_path, db=fifo_db)) as client:
        assert client.get("/api/status").json()["ingest_lock_held"] is False


def test_a_database_not_created_yet_is_locked_through_a_dangling_symlink(tmp_path: Path) -> None:
    real = tmp_path / "data" / "stats.db"
    real.parent.mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(real)  # dangling: nothing is there yet
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=2, body_bytes=10))
    holder = _hold(link)
    try:
        result = run_cli("import", mbox, "--db", real)
        assert result.returncode == 75, result.stderr
        assert real.stat().st_size == 0  # the holder made the file; the refused ingester never wrote to it
    finally:
        holder.kill()
        holder.communicate()
    assert run_cli("import", mbox, "--db", link, "--quiet").returncode == 0
    assert query(real, "SELECT state FROM ingest_runs") == [("done",)]
