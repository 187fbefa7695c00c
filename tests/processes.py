"""Real ingester processes for lifecycle tests: start, watch the run row through a read-only connection, signal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO_ROOT, ingester_env
from tests.importing import query


def start_import(db: Path, mbox: Path, *extra: str, **env: str) -> subprocess.Popen[str]:
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
            raise AssertionError(f"the ingester exited early ({process.returncode}): {process.stderr.read()}")  # type: ignore[union-attr]
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
    """PIDs of any `ingester.parse_worker` process on the machine."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"ingester.parse_worker" in cmdline and int(entry.name) != os.getpid():
            alive.append(int(entry.name))
    return alive


def wait_until(predicate: object, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False
