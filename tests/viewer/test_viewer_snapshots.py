"""One snapshot per answer: threads poll every read route of a real viewer while a real ingester commits.

A recorder copies the database (SQLite's backup, one read transaction) at each generation it sees. Afterwards a
fresh viewer reads each copy; every answer the pollers got for a recorded generation (`X-Gmail-Stats-Generation`)
must equal that fresh viewer's answer for it (no answer mixes two commits, and no cache serves an older one), and
each poller's first round after the ingester exits must equal the final state.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from shared.schema.migrations import LATEST_VERSION
from tests.conftest import REPO_ROOT, ingester_env
from tests.support.factories import mbox_bytes
from tests.support.net import free_port
from tests.support.polling import wait_for
from tests.support.processes import start_import
from tests.support.viewer import make_settings, viewer
from viewer.web.answers import GENERATION_HEADER

ROUTES = (
    "/api/status",
    "/api/runs",
    "/api/summary",
    "/api/senders",
    "/api/senders?q=s1&sort=sender&order=asc",
    "/api/senders?min_messages=40&offset=50",
    "/api/senders?exclude=s1@example.com&exclude=s2@example.com",
    "/api/domains",
    "/api/volume",
    "/api/volume?domain=example.com&exclude=s3@example.com",
    "/api/export.csv?q=s2",
)
POLLERS = 4
# Volatile parts of an answer: the clock, this viewer's process and lock, the rate it measured.
_CLOCK_KEYS = {"generated_at_unix", "now_unix"}
_LIVE_ONLY = {"csrf_token", "ingest_lock_held", "owns_active_run", "rate_per_sec", "eta_seconds", "retrying"}
_RUN_DERIVED = {"owned", "stopped_unexpectedly"}


@dataclass(frozen=True)
class Answer:
    route: str
    generation: str | None
    body: Any
    final: bool  # asked after the ingester had exited


def _runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in run.items() if k not in _RUN_DERIVED} for run in runs]


def normalised(route: str, status: int, text: str) -> Any:
    """What must not differ between the live viewer and a fresh one on a copy of the same commit."""
    assert status == 200, (route, text)
    if "export.csv" in route:
        return text
    body = {k: v for k, v in json.loads(text).items() if k not in _CLOCK_KEYS}
    if route == "/api/status":
        # The live viewer sees the ingester's lock, so its open run is `active_run`; the fresh one calls it history.
        runs = [r for r in (body.pop("active_run"), body.pop("last_run")) if r is not None]
        body = {k: v for k, v in body.items() if k not in _LIVE_ONLY}
        body["newest_run"] = _runs([max(runs, key=lambda r: r["run_id"])]) if runs else []
    if route == "/api/runs":
        body["runs"] = _runs(body["runs"])
    return body


def _is_busy(response: httpx.Response) -> bool:
    """A 503 `busy`: SQLite refused a read for a moment (the WAL's recovery or clean-up after a writer's last
    close holds an exclusive lock: sqlite.org/wal.html#sometimes_queries_return_sqlite_busy_in_wal_mode)."""
    return response.status_code == 503 and response.json().get("error") == "busy"


def _generation(db: Path) -> str | None:
    """The generation of a database whose schema is the one the viewer reads; None while it is being migrated
    (the generation counts the migration steps' commits too, and the viewer serves no generation before the last)."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            conn.execute("BEGIN")
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            row = conn.execute("SELECT epoch, generation FROM data_generation").fetchone()
    except sqlite3.OperationalError:
        return None  # not created or migrated yet
    return f"{row[0]}-{row[1]}" if row is not None and version == LATEST_VERSION else None


def _copy(db: Path, folder: Path) -> str | None:
    """A copy of one commit (the backup reads inside one transaction), named by the generation it holds."""
    scratch = folder / "scratch.db"
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as source, closing(sqlite3.connect(scratch)) as out:
        source.backup(out)
        out.execute("PRAGMA journal_mode=DELETE")
    generation = _generation(scratch)
    if generation is None:
        scratch.unlink()
        return None
    target = folder / generation
    if target.exists():
        scratch.unlink()
    else:
        target.mkdir()
        scratch.rename(target / "stats.db")
    return generation


@pytest.fixture
def live_viewer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "live" / "stats.db"
    db.parent.mkdir()
    port = free_port()
    env = ingester_env(GMAIL_STATS_DB=str(db), GMAIL_STATS_IMPORT_DIR=str(tmp_path / "live" / "imports"))
    process = subprocess.Popen(
        [sys.executable, "-m", "viewer", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{base}/api/status", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=60, interval=0.1)
        yield base, db
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)  # it finishes the answers in flight first
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_every_answer_is_one_commits_and_the_last_poll_is_the_final_state(
    tmp_path: Path, live_viewer: tuple[str, Path]
) -> None:
    base, db = live_viewer
    mbox = tmp_path / "mail.mbox"
    mbox.write_bytes(mbox_bytes(120_000, senders=3000, tag="snap"))
    copies = tmp_path / "copies"
    copies.mkdir()
    answers: list[Answer] = []
    busy: list[str] = []
    done, ended = threading.Event(), threading.Event()
    lock = threading.Lock()

    def record() -> None:
        seen: str | None = None
        while not ended.is_set():
            now = _generation(db)
            if now is not None and now != seen:
                seen = _copy(db, copies) or seen

    def poll() -> None:
        # A bound, not a speed: on a loaded 2-core machine one answer beside the import, the recorder's copies and
        # the other pollers has taken over 30 s; correctness is what this test checks.
        with httpx.Client(base_url=base, timeout=180) as client:
            while True:
                final = done.is_set()
                for route in ROUTES:
                    response = client.get(route)
                    while _is_busy(response):  # no commit's answer: the page shows "busy" and asks again
                        with lock:
                            busy.append(route)
                        response = client.get(route)
                    answer = Answer(
                        route,
                        response.headers.get(GENERATION_HEADER),
                        normalised(route, response.status_code, response.text),
                        final,
                    )
                    with lock:
                        answers.append(answer)
                if final:
                    return

    recorder = threading.Thread(target=record)
    pollers = [threading.Thread(target=poll) for _ in range(POLLERS)]
    recorder.start()
    for thread in pollers:
        thread.start()
    process = start_import(db, mbox, "--quiet", GMAIL_STATS_PARSE_WORKERS="0")
    try:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        last = _copy(db, copies)  # the final state (no writer is left)
        done.set()
        for thread in pollers:
            thread.join(timeout=600)
    finally:
        done.set()
        ended.set()
        recorder.join(timeout=60)
        if process.poll() is None:
            process.kill()
    assert last is not None

    expected: dict[tuple[str, str], Any] = {}
    for folder in sorted(p for p in copies.iterdir() if p.is_dir()):
        client: TestClient
        with viewer(make_settings(folder)) as client:
            for route in ROUTES:
                response = client.get(route)
                assert response.headers.get(GENERATION_HEADER) == folder.name, route
                expected[(route, folder.name)] = normalised(route, response.status_code, response.text)

    verified = {a.generation or "" for a in answers if (a.route, a.generation) in expected}
    for a in answers:
        if a.final:
            assert a.generation == last, a.route
        key = (a.route, a.generation or "")
        if key in expected:
            assert a.body == expected[key], (a.route, a.generation)
    assert all(a.generation is not None or not a.final for a in answers)
    # The answers span the run: more than the first and last states were seen, and checked.
    assert len(verified) >= 3, (sorted(verified), f"{len(busy)} busy answers")
