"""Real ingester processes for lifecycle tests: start, watch the run row through a read-only connection, signal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import OperationalError

from tests.conftest import REPO_ROOT, ingester_env
from tests.support.importing import query
from tests.support.polling import wait_for

# Every ingester a test starts carries this in its environment, and its parse workers inherit it, so a check for
# leftover workers never sees those of another test suite running on the same machine.
TEST_MARK = f"GMAIL_STATS_TEST_MARK={os.getpid()}"


def start_import(db: Path, mbox: Path, *extra: str, **env: str) -> subprocess.Popen[str]:
    env = {"GMAIL_STATS_TEST_MARK": str(os.getpid()), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "ingester", "import", str(mbox), "--db", str(db), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=REPO_ROOT,
        env=ingester_env(**env),
    )


def wait_for_progress(db: Path, process: subprocess.Popen[str], *, at_least: int, timeout: float = 60) -> int:
    """Polls the newest run's committed `bytes_done` until it reaches `at_least`; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"the ingester exited early ({process.returncode}): {stderr}")
        if db.exists():
            try:
                rows = query(db, "SELECT bytes_done FROM ingest_runs ORDER BY run_id DESC LIMIT 1")
            except Exception:
                rows = []
            if rows and rows[0][0] >= at_least:
                return int(rows[0][0])
        time.sleep(0.01)
    raise AssertionError("no progress in time")


def parse_workers_alive() -> list[int]:
    """PIDs of `ingester.mbox.parse_worker` processes started by this test run: children of this process, or
    descendants of an ingester this run started (found by `TEST_MARK` in their environment)."""
    alive = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if b"ingester.mbox.parse_worker" not in (entry / "cmdline").read_bytes():
                continue
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            marked = TEST_MARK.encode() in (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == me or marked:
            alive.append(int(entry.name))
    return alive


def wait_until(predicate: Callable[[], object], timeout: float = 10) -> bool:
    """True once `predicate` holds, False after `timeout` s: for asserts that carry their own message."""
    try:
        wait_for(lambda: bool(predicate()), timeout=timeout)
    except AssertionError:
        return False
    return True


def kill_when(
    process: subprocess.Popen[str], ready: Callable[[], object], *, what: str, timeout: float = 120, then: float = 0
) -> None:
    """`kill -9` of `process` once `ready()` holds (a run part-way through) and `then` s more; it is reaped either
    way, so a run that never got that far fails the test without leaving a process behind."""
    try:
        wait_for(lambda: bool(ready()), timeout=timeout, what=what)
        time.sleep(then)
    finally:
        process.kill()
        process.communicate(timeout=60)


def backfill_checked(db: Path) -> int:
    """Messages `scan --backfill-message-ids` has settled so far: 0 until its table exists."""
    try:
        return int(query(db, "SELECT count(*) FROM backfill_checked")[0][0])
    except OperationalError:
        return 0
