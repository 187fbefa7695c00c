"""Lock, kill -9, SIGTERM and resume with real processes: a crash or Ctrl-C never loses or doubles a count."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shared.lock import IngestLock, is_lock_held
from tests.conftest import REPO_ROOT, ingester_env, run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, import_file, query
from tests.support.polling import wait_for
from tests.support.processes import parse_workers_alive, start_import, wait_for_progress

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big_mbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """About 60 MB: long enough to interrupt a real import mid-way several times."""
    path = tmp_path_factory.mktemp("mbox") / "takeout.mbox"
    expected = write_mbox(path, generate_messages(count=40_000, body_bytes=1200, senders=500, spam_every=50))
    return path, expected


def test_second_ingester_is_refused_by_the_lock(tmp_path: Path, db_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from pathlib import Path; from shared.lock import IngestLock;"
            "IngestLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)",
            str(db_path),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=ingester_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_lock_held(db_path)
        mbox = tmp_path / "a.mbox"
        write_mbox(mbox, generate_messages(count=3, body_bytes=10))
        result = run_cli("import", mbox, "--db", db_path)
        assert result.returncode == 75
        assert result.stderr.strip() == f"gmail-stats: another ingester is already running against {db_path}"
        assert db_path.stat().st_size == 0  # the holder made it; the refused one never wrote to it
    finally:
        holder.kill()
        holder.communicate()
    assert not is_lock_held(db_path)


def test_a_refused_ingester_names_the_run_that_holds_the_lock(
    db_path: Path, big_mbox: tuple[Path, dict[str, int]]
) -> None:
    path, expected = big_mbox
    holder = start_import(db_path, path)
    try:
        wait_for_progress(db_path, holder, at_least=1)
        holder.send_signal(signal.SIGSTOP)  # mid-run and holding the lock for as long as the refusal takes
        (run_id, started) = query(db_path, "SELECT run_id, started_at_unix FROM ingest_runs")[0]
        result = run_cli("import", path, "--db", db_path)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
        assert (result.returncode, result.stderr.strip()) == (
            75,
            f"gmail-stats: another ingester is already running against {db_path}: run {run_id} (import of "
            f"takeout.mbox, started {when}); wait for it to end or cancel it",
        )
        holder.send_signal(signal.SIGCONT)
        assert holder.wait(timeout=120) == 0
    finally:
        holder.kill()
        holder.communicate()
    assert counts_of(db_path) == expected  # the refused one counted nothing twice


@pytest.mark.parametrize("content", [b"From a@b Mon Jan  1 00:00:00 2024\n", b"\x00" * 4096])
def test_a_file_that_is_no_database_is_refused_and_nothing_is_made_beside_it(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "mail.mbox"  # e.g. an mbox given to --db by mistake
    db.write_bytes(content)
    db.chmod(0o644)
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=3, body_bytes=10))
    result = run_cli("import", mbox, "--db", db)
    assert (result.returncode, result.stderr.strip()) == (
        1,
        f"gmail-stats: {db} is not a gmail-stats database or is damaged (file is not a database); choose another "
        "--db, or move it away to start afresh",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mbox", "mail.mbox"]
    assert (db.read_bytes(), db.stat().st_mode & 0o777) == (content, 0o644)


def _damaged(kind: str, tmp_path: Path) -> bytes:
    """A file that starts as SQLite does but cannot be used: SQLite's refusal comes only after the lock."""
    good = tmp_path / "good.db"
    with sqlite3.connect(good) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(str(i) * 100,) for i in range(2000)])
    data = good.read_bytes()
    good.unlink()
    if kind == "truncated":
        return data[:8192]
    if kind == "page one overwritten":
        return data[:100] + random.Random(7).randbytes(3996) + data[4096:]
    return b"SQLite format 3\x00" + random.Random(7).randbytes(8000)  # a header, then noise


@pytest.mark.parametrize("kind", ["truncated", "page one overwritten", "header then noise"])
def test_a_damaged_database_is_refused_and_nothing_is_made_beside_it(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "stats.db"
    content = _damaged(kind, tmp_path)
    db.write_bytes(content)
    db.chmod(0o644)
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=3, body_bytes=10))
    result = run_cli("import", mbox, "--db", db)
    assert result.returncode == 1
    assert result.stderr.startswith(f"gmail-stats: {db} is not a gmail-stats database or is damaged ("), result.stderr
    assert result.stderr.strip().endswith("choose another --db, or move it away to start afresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mbox", "stats.db"]
    assert (db.read_bytes(), db.stat().st_mode & 0o777) == (content, 0o644)


def test_a_database_too_new_is_refused_and_its_lock_file_is_not_left(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 999")
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=3, body_bytes=10))
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli("import", mbox, "--db", db)
    assert result.returncode != 0 and "schema version 999" in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_lock_is_not_inherited_by_children(db_path: Path) -> None:
    with IngestLock(db_path):
        child = subprocess.Popen(["sleep", "30"], close_fds=False)
        try:
            targets = {os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{child.pid}/fd")}
            assert str(db_path) + ".ingest.lock" not in targets and str(db_path) not in targets
        finally:
            child.kill()
            child.wait()


@pytest.mark.parametrize("workers", ["2", "0"])
def test_kill_9_at_random_points_then_resume_is_exact(
    big_mbox: tuple[Path, dict[str, int]], tmp_path: Path, workers: str
) -> None:
    mbox, expected = big_mbox
    db = tmp_path / "killed.db"
    size = mbox.stat().st_size
    rng = random.Random(int(workers) + 11)
    resume: list[str] = []
    for _ in range(3):
        process = start_import(db, mbox, *resume, GMAIL_STATS_PARSE_WORKERS=workers)
        done = wait_for_progress(db, process, at_least=rng.randint(size // 10, size * 8 // 10) if not resume else 1)
        time.sleep(rng.random() * 0.1)
        process.kill()
        process.communicate()
        assert done > 0
        assert query(db, "SELECT state FROM ingest_runs") == [("running",)], "killed too late to prove anything"
        (run_id,) = query(db, "SELECT run_id FROM ingest_runs ORDER BY run_id DESC LIMIT 1")[0]
        resume = ["--resume", str(run_id)]
        wait_for(lambda: not parse_workers_alive(), timeout=10, what="parse workers to exit with their killed parent")
    final = start_import(db, mbox, *resume, GMAIL_STATS_PARSE_WORKERS=workers)
    _, stderr = final.communicate(timeout=120)
    assert final.returncode == 0, stderr
    assert counts_of(db) == expected
    ((runs, state, outcome, new),) = query(db, "SELECT count(*), state, outcome, messages_new FROM ingest_runs")
    assert (runs, state, outcome, new) == (1, "done", "complete", sum(expected.values()))


def test_killed_run_is_marked_abandoned_by_the_next_ingester(
    big_mbox: tuple[Path, dict[str, int]], tmp_path: Path
) -> None:
    mbox, _ = big_mbox
    db = tmp_path / "stats.db"
    process = start_import(db, mbox)
    wait_for_progress(db, process, at_least=1)
    process.kill()
    process.communicate()
    assert query(db, "SELECT state FROM ingest_runs") == [("running",)]
    listing = run_cli("runs", "--json", "--db", db)
    assert json.loads(listing.stdout)[0]["state"] == "running"  # reading alone never decides liveness
    assert "no ingester holds the lock any more" in run_cli("runs", "--db", db).stdout
    small = tmp_path / "small.mbox"
    write_mbox(small, generate_messages(count=2, body_bytes=10, seed=3))
    assert run_cli("import", small, "--db", db).returncode == 0
    runs = json.loads(run_cli("runs", "--json", "--db", db).stdout)
    assert [(r["run_id"], r["state"], r["outcome"], r["error_kind"]) for r in runs] == [
        (2, "done", "complete", None),
        (1, "abandoned", "partial", "abandoned"),
    ]


def test_sigterm_cancels_cleanly_and_resume_finishes_exactly(
    big_mbox: tuple[Path, dict[str, int]], tmp_path: Path
) -> None:
    mbox, expected = big_mbox
    db = tmp_path / "stats.db"
    process = start_import(db, mbox)
    wait_for_progress(db, process, at_least=mbox.stat().st_size // 5)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - signalled < 30  # the contract is 2 s on an idle machine; generous for a loaded CI
    assert process.returncode == 0
    ((run_id, state, outcome, done),) = query(db, "SELECT run_id, state, outcome, bytes_done FROM ingest_runs")
    assert (state, outcome) == ("cancelled", "partial")
    assert 0 < done < mbox.stat().st_size
    assert f"resume with: gmail-stats import {mbox} --resume {run_id}" in stderr
    wait_for(lambda: not parse_workers_alive(), timeout=10, what="parse workers to exit")
    result = run_cli("import", mbox, "--resume", run_id, "--db", db)
    assert result.returncode == 0, result.stderr
    assert counts_of(db) == expected
    assert query(db, "SELECT state, outcome FROM ingest_runs") == [("done", "complete")]


def test_second_signal_aborts_at_once(big_mbox: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    mbox, expected = big_mbox
    db = tmp_path / "stats.db"
    process = start_import(db, mbox, GMAIL_STATS_PARSE_WORKERS="0")
    wait_for_progress(db, process, at_least=1)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)  # a bound for a hang, not a speed check
    assert process.returncode in (0, 130)
    (run_id,) = query(db, "SELECT run_id FROM ingest_runs")[0]
    assert run_cli("import", mbox, "--resume", run_id, "--db", db).returncode == 0
    assert counts_of(db) == expected


def test_resume_of_a_changed_file_restarts_and_stays_exact(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=50, body_bytes=100))
    stop = threading.Event()
    stop.set()  # a Ctrl-C right away: the run ends cancelled after its first batch
    first = import_file(db_path, mbox, cancel=stop)
    assert first.state == "cancelled"
    expected = write_mbox(mbox, generate_messages(count=80, body_bytes=100))  # Takeout wrote a new export
    again = import_file(db_path, mbox, resume_run_id=first.run_id)
    assert again.run_id == first.run_id
    assert (again.messages_seen, again.messages_new) == (80, 80)
    assert counts_of(db_path) == expected
    ((warnings,),) = query(db_path, "SELECT warnings_tail FROM ingest_runs")
    assert "re-reading from the start" in warnings


def test_resume_of_unknown_or_wrong_run(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=2, body_bytes=10))
    result = run_cli("import", mbox, "--resume", "42", "--db", db_path)
    assert (result.returncode, result.stderr.strip()) == (2, "gmail-stats: there is no run 42; see `gmail-stats runs`")
