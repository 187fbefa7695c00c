"""Resume that cannot go wrong: every printed command is complete and works as pasted, and a resume that would
mix runs (finished, another file, another source) is refused with exit 2 and changes nothing."""

from __future__ import annotations

import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError

from shared.resume import CommandStyle, resume_command
from shared.schema.models import RunOutcome, RunState, Source
from tests.conftest import REPO_ROOT, ingester_env, run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, query
from tests.support.make import paste, recorded, scratch_checkout
from tests.support.processes import start_import, wait_until


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"source": Source.MBOX, "run_id": 3, "mbox_path": "/m/a.mbox"}, "gmail-stats import /m/a.mbox --resume 3"),
        (
            {"source": Source.MBOX, "run_id": 3, "mbox_path": "/m/All mail.mbox", "db": "/d/my stats.db"},
            "gmail-stats import '/m/All mail.mbox' --resume 3 --db '/d/my stats.db'",
        ),
        ({"source": Source.GMAIL_API, "run_id": 4}, "gmail-stats scan --resume 4"),
        ({"source": Source.GMAIL_API, "run_id": 4, "db": "/d/x.db"}, "gmail-stats scan --resume 4 --db /d/x.db"),
        (
            {"source": Source.BACKFILL, "run_id": 5, "db": "/d/x.db"},
            "gmail-stats scan --backfill-message-ids --db /d/x.db",
        ),
        (
            {"source": Source.MBOX, "run_id": 3, "mbox_path": "/home/me/All mail.mbox", "style": CommandStyle.MAKE},
            "make import MBOX='/home/me/All mail.mbox' RESUME=3",
        ),
        ({"source": Source.GMAIL_API, "run_id": 4, "style": CommandStyle.MAKE}, "make scan RESUME=4"),
    ],
)
def test_resume_commands(kwargs: dict[str, object], expected: str) -> None:
    assert resume_command(**kwargs) == expected  # type: ignore[arg-type]


def _stopped_then(process: subprocess.Popen[str], db: Path, *signals: signal.Signals) -> str:
    """Freezes the import once it has committed something, delivers `signals` together, and returns its stderr."""
    assert wait_until(lambda: _bytes_done(db) > 0, timeout=60), "the import never got going"
    process.send_signal(signal.SIGSTOP)
    for sig in signals:
        process.send_signal(sig)
    process.send_signal(signal.SIGCONT)
    _, stderr = process.communicate(timeout=60)
    return stderr


def _bytes_done(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        rows = query(db, "SELECT bytes_done FROM ingest_runs WHERE state = 'running'")
    except (sqlite3.Error, DBAPIError):  # not created or not migrated yet
        return 0
    return int(rows[0][0]) if rows else 0


def _hint(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if "resume with: " in line]
    return line.split("resume with: ", 1)[1]


@pytest.fixture
def spaced(tmp_path: Path) -> tuple[Path, Path, dict[str, int]]:
    """A big mbox and a database, both in folders with spaces in their names."""
    (tmp_path / "my mail").mkdir()
    (tmp_path / "my data").mkdir()
    mbox = tmp_path / "my mail" / "All mail.mbox"
    expected = write_mbox(mbox, generate_messages(count=30_000, body_bytes=1200, senders=200))
    return mbox, tmp_path / "my data" / "big.db", expected


@pytest.mark.slow
def test_the_printed_command_resumes_from_anywhere(tmp_path: Path, spaced: tuple[Path, Path, dict[str, int]]) -> None:
    """The issue's trap: `./stats.db` in the current folder holds a finished import of another file."""
    mbox, db, expected = spaced
    other = tmp_path / "other.mbox"
    write_mbox(other, generate_messages(count=3, body_bytes=10, seed=9))
    assert run_cli("import", other, "--db", tmp_path / "stats.db", "--quiet").returncode == 0
    process = start_import(db, mbox, GMAIL_STATS_PARSE_WORKERS="0")
    stderr = _stopped_then(process, db, signal.SIGTERM)
    assert process.returncode == 0, stderr
    argv = shlex.split(_hint(stderr))
    assert argv == ["gmail-stats", "import", str(mbox), "--resume", "1", "--db", str(db)]
    stats_before = query(tmp_path / "stats.db", "SELECT * FROM ingest_runs")
    # Pasted in another folder, it finishes the right run of the right database.
    pasted = subprocess.run(
        [sys.executable, "-m", "ingester", *argv[1:]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**ingester_env(), "PYTHONPATH": str(REPO_ROOT)},
    )
    assert pasted.returncode == 0, pasted.stderr
    assert counts_of(db) == expected
    assert query(db, "SELECT run_id, state, outcome FROM ingest_runs") == [(1, "done", "complete")]
    # The old hint without --db, run where ./stats.db is: refused, and that database is left as it was.
    old = subprocess.run(
        [sys.executable, "-m", "ingester", "import", str(mbox), "--resume", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**ingester_env(), "PYTHONPATH": str(REPO_ROOT)},
    )
    assert (old.returncode, old.stderr.strip()) == (
        2,
        "gmail-stats: run 1 already finished (complete); there is nothing to resume",
    )
    assert query(tmp_path / "stats.db", "SELECT * FROM ingest_runs") == stats_before


@pytest.mark.slow
def test_a_second_signal_names_the_run_to_resume(spaced: tuple[Path, Path, dict[str, int]]) -> None:
    mbox, db, expected = spaced
    process = start_import(db, mbox, GMAIL_STATS_PARSE_WORKERS="0")
    stderr = _stopped_then(process, db, signal.SIGINT, signal.SIGTERM)  # both pending: cancel, then abort
    assert process.returncode == 130, stderr
    prefix = "second signal: aborting now; committed work is kept; resume later with: "
    (line,) = [line for line in stderr.splitlines() if line.startswith("second signal")]
    assert line == prefix + shlex.join(["gmail-stats", "import", str(mbox), "--resume", "1", "--db", str(db)])
    result = run_cli(*shlex.split(line.removeprefix(prefix))[1:], timeout=300)
    assert result.returncode == 0, result.stderr
    assert counts_of(db) == expected


@pytest.mark.slow
def test_in_docker_the_hint_is_the_make_form(spaced: tuple[Path, Path, dict[str, int]]) -> None:
    mbox, db, expected = spaced
    host = "/home/me/Takeout/All mail (2024).mbox"
    env = {"GMAIL_STATS_COMMAND_STYLE": "make", "GMAIL_STATS_HOST_MBOX": host, "GMAIL_STATS_PARSE_WORKERS": "0"}
    process = start_import(db, mbox, **env)
    stderr = _stopped_then(process, db, signal.SIGTERM)
    assert _hint(stderr) == "make import MBOX='/home/me/Takeout/All mail (2024).mbox' RESUME=1"
    # The run names the file as the host does (the page and `runs` show it; the container's path means nothing
    # there), and `make import` of that host path resumes it; another host file is refused.
    assert query(db, "SELECT mbox_path FROM ingest_runs") == [(host,)]
    other = run_cli("import", mbox, "--db", db, "--resume", "1", GMAIL_STATS_HOST_MBOX="/home/me/other.mbox")
    assert other.returncode == 2 and f"run 1 imported {host}, not /home/me/other.mbox" in other.stderr
    resumed = run_cli("import", mbox, "--db", db, "--resume", "1", timeout=300, **env)
    assert resumed.returncode == 0, resumed.stderr
    assert counts_of(db) == expected


@pytest.mark.slow
def test_a_runners_import_hint_names_the_hosts_import_folder(
    tmp_path: Path, spaced: tuple[Path, Path, dict[str, int]]
) -> None:
    """A page import under Docker runs in a runner confined to /imports; its log shows the host's command."""
    mbox, db, expected = spaced
    env = {
        "GMAIL_STATS_COMMAND_STYLE": "make",
        "GMAIL_STATS_HOST_IMPORT_DIR": "/home/me/gmail-stats/imports",
        "GMAIL_STATS_PARSE_WORKERS": "0",
    }
    process = start_import(db, mbox, "--confine-to", str(tmp_path), **env)
    stderr = _stopped_then(process, db, signal.SIGTERM)
    host = "/home/me/gmail-stats/imports/my mail/All mail.mbox"
    assert _hint(stderr) == f"make import MBOX='{host}' RESUME=1"
    # The run row names the host's file too (`make runs` and the page show it), and a runner resumes it.
    assert query(db, "SELECT mbox_path FROM ingest_runs") == [(host,)]
    resumed = run_cli("import", mbox, "--db", db, "--confine-to", tmp_path, "--resume", "1", timeout=300, **env)
    assert resumed.returncode == 0, resumed.stderr
    assert counts_of(db) == expected


def _snapshot(db: Path) -> list[list[tuple[object, ...]]]:
    return [query(db, f"SELECT * FROM {t}") for t in ("ingest_runs", "senders", "seen_mails")]


def _add_run(db: Path, source: Source, state: RunState) -> int:
    from shared.db import writer_engine
    from shared.runs import create_run, finish_run

    engine = writer_engine(db)
    try:
        with engine.begin() as conn:
            run_id = create_run(conn, source=source, pid=1, now=1)
            finish_run(conn, run_id, state=state, outcome=RunOutcome.PARTIAL, now=2)
    finally:
        engine.dispose()
    return run_id


def test_refused_resumes_exit_2_and_change_nothing(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    a, b = tmp_path / "a.mbox", tmp_path / "b.mbox"
    write_mbox(a, generate_messages(count=5, body_bytes=10, seed=1))
    write_mbox(b, generate_messages(count=5, body_bytes=10, seed=2))
    assert run_cli("import", a, "--db", db, "--quiet").returncode == 0  # run 1: finished
    scan_run = _add_run(db, Source.GMAIL_API, RunState.CANCELLED)  # run 2: an interrupted scan
    import_run = _add_run(db, Source.MBOX, RunState.CANCELLED)  # run 3: an interrupted import of no file
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE ingest_runs SET mbox_path = ? WHERE run_id = ?", (str(a), import_run))
    before = _snapshot(db)
    cases = [
        (("import", a, "--resume", "1"), "run 1 already finished (complete); there is nothing to resume"),
        (
            ("import", b, "--resume", str(import_run)),
            f"run {import_run} imported {a}, not {b}; resume it with that file, or start a new import without --resume",
        ),
        (
            ("import", a, "--resume", str(scan_run)),
            f"run {scan_run} is a Gmail scan, not an mbox import; continue it with `scan`",
        ),
        (
            ("scan", "--resume", str(import_run)),
            f"run {import_run} is an mbox import, not a Gmail scan; continue it with `import`",
        ),
        (("scan", "--resume", "99"), "there is no run 99; see `gmail-stats runs`"),
    ]
    for args, message in cases:
        result = run_cli(*args, "--db", db)
        assert (result.returncode, result.stderr.strip()) == (2, f"gmail-stats: {message}"), args
    assert _snapshot(db) == before


def test_make_verbs_take_resume(tmp_path: Path) -> None:
    """What the make-form hint asks for: `make import MBOX=… RESUME=N` and `make scan RESUME=N`, run in a checkout
    whose `docker compose run` only records what it was asked to start."""
    mbox = tmp_path / "my mail" / "All mail.mbox"
    mbox.parent.mkdir()
    mbox.write_bytes(b"")
    root = scratch_checkout(tmp_path)
    for command, expected in [
        ("make scan RESUME=4", ["--service-ports", "ingester", "scan", "--resume", "4"]),
        ("make scan", ["--service-ports", "ingester", "scan"]),
        (f"make import MBOX='{mbox}' RESUME=3", [*_mounted(mbox), "--resume", "3"]),
        (f"make import MBOX='{mbox}'", _mounted(mbox)),
    ]:
        result = paste(root, command)
        assert result.returncode == 0, result.stderr
        assert recorded(root) == expected


def _mounted(mbox: Path) -> list[str]:
    host = ["--env", f"GMAIL_STATS_HOST_MBOX={mbox}"]
    return ["--volume", f"{mbox.parent}:/mbox:ro", *host, "ingester", "import", f"/mbox/{mbox.name}"]
