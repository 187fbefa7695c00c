"""`viewer.launch.control`: when an open run row is shown as stopped, and what a partial scan left out, derived from
real files (the ingest lock, the database) and a launcher that says whether its runner still runs; the row untouched."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import insert

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.launch_request import LaunchRequest
from shared.lock import IngestLock
from shared.runs import create_run, finish_run, get_run
from shared.schema.models import RunOutcome, RunState, Source, gmail_retry
from tests.support.viewer import file_digests, make_settings, seed, viewer
from viewer.launch.control import stopped_unexpectedly
from viewer.launch.launcher import Launched

NOW = 1_800_000_000
TOKEN = "t" * 32


class _Runner:
    """A launcher that owns one runner (adopted at start, as after a viewer restart) and reports it alive or not."""

    def __init__(self, *, alive: bool) -> None:
        self.alive = alive

    def launch(self, request: LaunchRequest) -> Launched:
        raise AssertionError("no launch in these tests")

    def is_alive(self, launched: Launched) -> bool:
        return self.alive

    def cancel(self, launched: Launched, *, grace_seconds: float) -> None:
        return None

    def log_tail(self, launched: Launched, *, lines: int = 0) -> list[str]:
        return []

    def adopt(self) -> list[Launched]:
        return [Launched(handle="runner-1", launch_token=TOKEN)]

    def reap(self) -> None:
        return None

    def consent_listener(self, launched: Launched | None, *, redirect_port: int) -> tuple[str, int]:
        return "127.0.0.1", redirect_port

    def close(self) -> None:
        return None


@pytest.mark.parametrize(
    ("state", "lock_held", "runner_alive", "stopped"),
    [
        (RunState.RUNNING, False, False, True),  # killed: nobody holds the lock, its runner is gone
        (RunState.AWAITING_AUTH, False, False, True),
        (RunState.RUNNING, True, False, False),  # an ingester holds the lock: it is running
        (RunState.RUNNING, False, True, False),  # the runner still runs (a lock the viewer cannot see)
        (RunState.DONE, False, False, False),
        (RunState.CANCELLED, False, False, False),
        (RunState.ABANDONED, False, False, False),  # already recorded; the page shows it the same way
    ],
)
def test_only_an_open_row_nobody_runs_is_stopped(
    tmp_path: Path, state: RunState, lock_held: bool, runner_alive: bool, stopped: bool
) -> None:
    db = tmp_path / "stats.db"
    seed(db)
    engine = writer_engine(db)
    with engine.begin() as conn:
        run = get_run(conn, create_run(conn, source=Source.MBOX, pid=1, now=NOW))
    close_writer_keeping_sidecars(engine, db)
    assert run is not None
    assert stopped_unexpectedly(replace(run, state=str(state)), lock_held=lock_held, runner_alive=runner_alive) is (
        stopped
    )


def _open_row(db: Path) -> None:
    seed(db)
    engine = writer_engine(db)
    with engine.begin() as conn:
        create_run(conn, source=Source.MBOX, pid=1, now=NOW, launch_token=TOKEN)
    close_writer_keeping_sidecars(engine, db)


@pytest.mark.parametrize("alive", [True, False])
def test_the_api_asks_the_launcher_whether_its_runner_exited(tmp_path: Path, db_path: Path, alive: bool) -> None:
    _open_row(db_path)
    before = file_digests(db_path)
    with viewer(make_settings(tmp_path), launcher=_Runner(alive=alive)) as client:
        last = client.get("/api/status").json()["last_run"]
        listed = client.get("/api/runs").json()["runs"][0]
    assert (last["state"], last["owned"], last["stopped_unexpectedly"]) == ("running", True, not alive)
    assert listed["stopped_unexpectedly"] is (not alive)
    assert file_digests(db_path) == before  # derived: the viewer wrote nothing


def test_a_held_lock_means_running_whatever_the_runner_says(tmp_path: Path, db_path: Path) -> None:
    _open_row(db_path)
    with IngestLock(db_path), viewer(make_settings(tmp_path), launcher=_Runner(alive=False)) as client:
        status = client.get("/api/status").json()
    assert (status["active_run"]["run_id"], status["active_run"]["stopped_unexpectedly"]) == (2, False)
    assert status["last_run"]["stopped_unexpectedly"] is False


def test_unfetched_counts_the_retry_table_by_run(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        scan = create_run(conn, source=Source.GMAIL_API, pid=1, now=NOW)
        finish_run(conn, scan, state=RunState.DONE, outcome=RunOutcome.PARTIAL, now=NOW + 5)
        conn.execute(insert(gmail_retry), [{"gmail_id": f"g{i}", "run_id": scan, "reason": "500"} for i in range(3)])
    close_writer_keeping_sidecars(engine, db_path)
    with viewer(make_settings(tmp_path)) as client:
        runs = client.get("/api/runs").json()["runs"]
        last = client.get("/api/status").json()["last_run"]
    assert [(run["run_id"], run["unfetched"]) for run in runs] == [(scan, 3), (1, 0)]
    assert (last["outcome"], last["unfetched"], last["stopped_unexpectedly"]) == ("partial", 3, False)
