"""Cancelling and watching ingesters launched through the API: cancel then Resume with the real ingester, a child
that ignores SIGTERM (killed, then found abandoned), a restarted viewer that shows another's run but may not cancel
it, and unknown runs. A fake ingester (tests/fakes/ingester.py) shows what a real import is too fast to.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.launch.launching import fake_bin, finished, pid_gone, pid_of, run_row, start, write_imports
from tests.support.viewer import csrf_headers, make_settings, mbox_bytes, seed, viewer, wait_for

pytestmark = pytest.mark.slow


def test_cancel_gives_a_cancelled_row_then_resume_finishes_it(tmp_path: Path) -> None:
    write_imports(tmp_path, {"big.mbox": mbox_bytes(150_000, senders=50)})
    with viewer(make_settings(tmp_path)) as client:
        run_id = start(client, {"source": "mbox", "path": "big.mbox"}).json()["run_id"]
        cancel = client.post(f"/api/runs/{run_id}/cancel", json={}, headers=csrf_headers(client))
        assert cancel.status_code == 202, cancel.text
        run = wait_for(lambda: finished(client, run_id))
        assert (run["state"], run["outcome"]) == ("cancelled", "partial")
        assert run["bytes_done"] < run["bytes_total"]
        # The row says `cancelled` before the ingester closes the database, releases the lock and prints its hint.
        wait_for(
            lambda: any("--resume" in line for line in client.get(f"/api/runs/{run_id}/log").json()["lines"]),
            timeout=60,
            what="the resume hint in the run's log",
        )
        resumed = start(client, {"source": "mbox", "resume_run_id": run_id})
        assert resumed.status_code == 202 and resumed.json() == {"run_id": run_id}
        run = wait_for(lambda: finished(client, run_id))
        assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", 150_000)


def test_a_child_ignoring_sigterm_is_killed_and_later_abandoned(tmp_path: Path, db_path: Path) -> None:
    write_imports(tmp_path, {"a.mbox": mbox_bytes(5)})
    settings = make_settings(tmp_path, ingest_bin=fake_bin(tmp_path, "stubborn"), cancel_grace_seconds=0.5)
    with viewer(settings) as client:
        run_id = start(client, {"source": "mbox", "path": "a.mbox"}).json()["run_id"]
        status = client.get("/api/status").json()
        assert status["owns_active_run"] is True and status["active_run"]["run_id"] == run_id
        assert "pid" not in status["active_run"]  # the page never signals; the PID stays on the run row
        pid = pid_of(settings.db, run_id)
        assert client.post(f"/api/runs/{run_id}/cancel", json={}, headers=csrf_headers(client)).status_code == 202
        wait_for(lambda: pid_gone(pid), timeout=30)
        wait_for(lambda: not client.get("/api/status").json()["ingest_lock_held"])
        assert run_row(client, run_id)["state"] == "running"  # nobody wrote its end...
        assert run_cli("import", tmp_path / "imports/a.mbox", "--db", db_path, "--quiet").returncode == 0
        run = run_row(client, run_id)  # ...until the next ingester found it open without the lock
        assert (run["state"], run["outcome"], run["error_kind"]) == ("abandoned", "partial", "abandoned")
        log = client.get(f"/api/runs/{run_id}/log").json()["lines"]
        assert log[0] == "fake ingester stubborn import starting"


def test_a_restarted_viewer_still_shows_live_progress(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ingest_bin=fake_bin(tmp_path, "slow"))
    with viewer(settings) as first:
        run_id = start(first, {"source": "gmail_api"}).json()["run_id"]
        pid = pid_of(settings.db, run_id)
    try:
        with viewer(settings) as second:

            def progressing() -> dict[str, Any] | None:
                status = second.get("/api/status").json()
                return status if status["rate_per_sec"] and status["eta_seconds"] else None

            status = wait_for(progressing, timeout=30, interval=0.2)
            assert status["active_run"]["run_id"] == run_id
            assert status["active_run"]["source"] == "gmail_api"
            assert status["owns_active_run"] is False and status["active_run"]["owned"] is False
            assert 0 < status["rate_per_sec"] <= 20_000  # messages (bytes would be 100x); at most the fake's 5,000/s
            refused = second.post(f"/api/runs/{run_id}/cancel", json={}, headers=csrf_headers(second))
            assert refused.status_code == 409
            assert refused.json() == {
                "error": "not_owned",
                "message": "this run was started elsewhere; cancel it where it was started",
            }
            assert second.get(f"/api/runs/{run_id}/log").status_code == 404
    finally:
        os.kill(pid, signal.SIGTERM)  # the fake we started cancels cleanly on SIGTERM
    wait_for(lambda: pid_gone(pid), timeout=30)


def test_cancel_and_log_of_unknown_runs(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        cancel = client.post("/api/runs/1/cancel", json={}, headers=csrf_headers(client))
        log = client.get("/api/runs/5/log")
    assert (cancel.status_code, cancel.json()["error"]) == (409, "not_owned")
    assert log.status_code == 404
    assert log.json() == {
        "error": "not_owned",
        "message": "only the log of a run started from this viewer is available",
    }
