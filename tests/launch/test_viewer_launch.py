"""Launching, cancelling and watching ingesters through the API: the real ingester, and a fake one for the
behaviours a real import is too fast to show (a slow run, a child that ignores SIGTERM)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from shared.db import reader_engine
from shared.launch_request import LaunchCommand, LaunchRequest
from shared.lock import IngestLock
from shared.runs import get_run
from tests.conftest import REPO_ROOT, ingester_env, run_cli
from tests.support.importing import query
from tests.support.viewer import csrf_headers, make_settings, mbox_bytes, seed, viewer, wait_for
from viewer.launch.launch_process import build_argv

pytestmark = pytest.mark.slow


def _fake_bin(tmp_path: Path, mode: str) -> Path:
    """An executable that runs the fake ingester with `mode` before the viewer's fixed argv."""
    script = tmp_path / f"fake-ingester-{mode}"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{REPO_ROOT}" exec "{sys.executable}" -m tests.fakes.ingester {mode} "$@"\n'
    )
    script.chmod(0o755)
    return script


def _imports(tmp_path: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        target = tmp_path / "imports" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _start(client: TestClient, body: dict[str, Any]) -> Any:
    return client.post("/api/runs", json=body, headers=csrf_headers(client))


def _run(client: TestClient, run_id: int) -> dict[str, Any]:
    response = client.get("/api/runs")
    assert response.status_code == 200, response.text
    runs = response.json()["runs"]
    return next(run for run in runs if run["run_id"] == run_id)


def _finished(client: TestClient, run_id: int) -> dict[str, Any] | None:
    run = _run(client, run_id)
    return run if run["state"] not in ("running", "awaiting_auth") else None


def _pid_of(db_path: Path, run_id: int) -> int:
    engine = reader_engine(db_path)
    try:
        with engine.connect() as conn:
            run = get_run(conn, run_id)
    finally:
        engine.dispose()
    assert run is not None and run.pid is not None
    return run.pid


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (LaunchRequest(LaunchCommand.SCAN, "t"), ["gmail-stats", "scan", "--quiet"]),
        (LaunchRequest(LaunchCommand.SCAN, "t", resume_run_id=7), ["gmail-stats", "scan", "--resume", "7", "--quiet"]),
        (
            LaunchRequest(LaunchCommand.IMPORT, "t", "a b/x.mbox"),
            ["gmail-stats", "import", "/imp/a b/x.mbox", "--confine-to", "/imp", "--quiet"],
        ),
        (
            LaunchRequest(LaunchCommand.IMPORT, "t", "x.mbox", resume_run_id=3),
            ["gmail-stats", "import", "/imp/x.mbox", "--confine-to", "/imp", "--resume", "3", "--quiet"],
        ),
    ],
)
def test_argv_is_fixed(request_: LaunchRequest, expected: list[str]) -> None:
    assert build_argv(["gmail-stats"], request_, import_dir=Path("/imp")) == expected


def test_the_ingester_is_handed_the_checked_files_real_path_not_the_link(tmp_path: Path) -> None:
    """The check-then-use race: the viewer checks the link's target, so it hands over that target (resolved), and
    the ingester (`--confine-to`) would refuse the link itself if it were handed over and swapped meanwhile."""
    _imports(tmp_path, {"Takeout/Mail/all.mbox": mbox_bytes(20)})
    (tmp_path / "imports" / "latest.mbox").symlink_to(tmp_path / "imports" / "Takeout/Mail/all.mbox")
    settings = make_settings(tmp_path)
    with viewer(settings) as client:
        response = _start(client, {"source": "mbox", "path": "latest.mbox"})
        assert response.status_code == 202, response.text
        run = wait_for(lambda: _finished(client, response.json()["run_id"]))
        assert (run["state"], run["messages_new"]) == ("done", 20)
    # What the ingester was handed (and recorded): the checked target, not the link.
    assert query(settings.db, "SELECT mbox_path FROM ingest_runs") == [
        (str((tmp_path / "imports/Takeout/Mail/all.mbox").resolve()),)
    ]


def test_import_from_the_api_completes_with_the_real_ingester(tmp_path: Path) -> None:
    _imports(tmp_path, {"Takeout/Mail/all.mbox": mbox_bytes(300)})
    with viewer(make_settings(tmp_path)) as client:
        response = _start(client, {"source": "mbox", "path": "Takeout/Mail/all.mbox"})
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        run = wait_for(lambda: _finished(client, run_id))
        assert (run["state"], run["outcome"], run["messages_new"], run["owned"]) == ("done", "complete", 300, True)
        assert run["mbox_path"] == "Takeout/Mail/all.mbox"  # relative to the import folder, never the host path
        senders = client.get("/api/senders").json()
        assert (senders["total"], senders["total_messages"]) == (7, 300)
        assert client.get("/api/status").json()["db"] == "ready"
        assert client.get(f"/api/runs/{run_id}/log").json() == {"run_id": run_id, "lines": []}  # --quiet
        # A complete import cannot be resumed; a new import of the same file adds nothing.
        again = _start(client, {"source": "mbox", "resume_run_id": run_id})
        assert again.status_code == 422 and again.json()["error"] == "bad_resume"


def test_409_while_a_terminal_ingester_holds_the_lock(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    _imports(tmp_path, {"a.mbox": mbox_bytes(3)})
    with viewer(make_settings(tmp_path)) as client, IngestLock(db_path):
        response = _start(client, {"source": "mbox", "path": "a.mbox"})
        scan = _start(client, {"source": "gmail_api"})
        status = client.get("/api/status").json()
    assert response.status_code == 409
    assert response.json() == {
        "error": "run_active",
        "message": "an ingester is already running; wait for it or cancel it",
    }
    assert scan.status_code == 409
    assert status["ingest_lock_held"] is True


def test_cancel_gives_a_cancelled_row_then_resume_finishes_it(tmp_path: Path) -> None:
    _imports(tmp_path, {"big.mbox": mbox_bytes(150_000, senders=50)})
    with viewer(make_settings(tmp_path)) as client:
        run_id = _start(client, {"source": "mbox", "path": "big.mbox"}).json()["run_id"]
        cancel = client.post(f"/api/runs/{run_id}/cancel", json={}, headers=csrf_headers(client))
        assert cancel.status_code == 202, cancel.text
        run = wait_for(lambda: _finished(client, run_id))
        assert (run["state"], run["outcome"]) == ("cancelled", "partial")
        assert run["bytes_done"] < run["bytes_total"]
        # The row says `cancelled` before the ingester closes the database, releases the lock and prints its hint.
        wait_for(
            lambda: any("--resume" in line for line in client.get(f"/api/runs/{run_id}/log").json()["lines"]),
            timeout=60,
            what="the resume hint in the run's log",
        )
        resumed = _start(client, {"source": "mbox", "resume_run_id": run_id})
        assert resumed.status_code == 202 and resumed.json() == {"run_id": run_id}
        run = wait_for(lambda: _finished(client, run_id))
        assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", 150_000)


def test_a_child_ignoring_sigterm_is_killed_and_later_abandoned(tmp_path: Path, db_path: Path) -> None:
    _imports(tmp_path, {"a.mbox": mbox_bytes(5)})
    settings = make_settings(tmp_path, ingest_bin=_fake_bin(tmp_path, "stubborn"), cancel_grace_seconds=0.5)
    with viewer(settings) as client:
        run_id = _start(client, {"source": "mbox", "path": "a.mbox"}).json()["run_id"]
        status = client.get("/api/status").json()
        assert status["owns_active_run"] is True and status["active_run"]["run_id"] == run_id
        assert "pid" not in status["active_run"]  # the page never signals; the PID stays on the run row
        pid = _pid_of(settings.db, run_id)
        assert client.post(f"/api/runs/{run_id}/cancel", json={}, headers=csrf_headers(client)).status_code == 202
        wait_for(lambda: _pid_gone(pid), timeout=30)
        wait_for(lambda: not client.get("/api/status").json()["ingest_lock_held"])
        assert _run(client, run_id)["state"] == "running"  # nobody wrote its end...
        assert run_cli("import", tmp_path / "imports/a.mbox", "--db", db_path, "--quiet").returncode == 0
        run = _run(client, run_id)  # ...until the next ingester found it open without the lock
        assert (run["state"], run["outcome"], run["error_kind"]) == ("abandoned", "partial", "abandoned")
        log = client.get(f"/api/runs/{run_id}/log").json()["lines"]
        assert log[0] == "fake ingester stubborn import starting"


def test_a_restarted_viewer_still_shows_live_progress(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ingest_bin=_fake_bin(tmp_path, "slow"))
    with viewer(settings) as first:
        run_id = _start(first, {"source": "gmail_api"}).json()["run_id"]
        pid = _pid_of(settings.db, run_id)
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
    wait_for(lambda: _pid_gone(pid), timeout=30)


def test_spawn_failures_are_500_with_a_hint(tmp_path: Path) -> None:
    _imports(tmp_path, {"a.mbox": mbox_bytes(1)})
    with viewer(make_settings(tmp_path, ingest_bin=tmp_path / "no-such-binary")) as client:
        missing = _start(client, {"source": "mbox", "path": "a.mbox"})
    with viewer(make_settings(tmp_path, ingest_bin=Path("/bin/false"))) as client:
        dies = _start(client, {"source": "gmail_api"})
    assert missing.status_code == 500
    assert missing.json() == {
        "error": "spawn_failed",
        "message": "could not start the ingester: No such file or directory",
        "hint": "check GMAIL_STATS_INGEST_BIN points at the gmail-stats executable",
    }
    assert dies.status_code == 500
    assert dies.json()["error"] == "spawn_failed"
    assert set(dies.json()) == {"error", "message", "hint"}


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"source": "imap"}, "bad_source"),
        ({"source": "backfill"}, "bad_source"),
        ({"source": "mbox"}, "bad_path"),
        ({"source": "mbox", "path": "../outside.mbox"}, "bad_path"),
        ({"source": "mbox", "path": "escape.mbox"}, "bad_path"),  # a symlink to a file outside
        ({"source": "mbox", "path": "escape-dir/x.mbox"}, "bad_path"),  # through a symlinked folder
        ({"source": "mbox", "path": "/etc/passwd"}, "bad_path"),
        ({"source": "mbox", "path": "missing.mbox"}, "bad_path"),
        ({"source": "mbox", "path": "folder.mbox"}, "bad_path"),
        ({"source": "mbox", "path": "notes.mbox"}, "bad_path"),
        ({"source": "mbox", "resume_run_id": 99}, "bad_resume"),
        ({"source": "gmail_api", "resume_run_id": 1}, "bad_resume"),  # run 1 is an import
        ({"source": "mbox", "resume_run_id": 1}, "bad_resume"),  # complete, and its file is outside the folder
        ({"source": "mbox", "path": "a.mbox", "extra": 1}, "bad_request"),
        ({"source": "mbox", "resume_run_id": "x"}, "bad_request"),
    ],
)
def test_launch_validation(tmp_path: Path, db_path: Path, body: dict[str, Any], kind: str) -> None:
    seed(db_path)
    outside = tmp_path / "outside.mbox"
    outside.write_bytes(mbox_bytes(1))
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "x.mbox").write_bytes(mbox_bytes(1))
    _imports(tmp_path, {"a.mbox": mbox_bytes(1), "notes.mbox": b"just some text\n", "folder.mbox/x": b""})
    (tmp_path / "imports" / "escape.mbox").symlink_to(outside)
    (tmp_path / "imports" / "escape-dir").symlink_to(tmp_path / "outdir")
    with viewer(make_settings(tmp_path, ingest_bin=Path("/bin/false"))) as client:
        response = client.post("/api/runs", json=body, headers=csrf_headers(client))
    assert response.status_code == 422, response.text
    assert response.json()["error"] == kind
    assert set(response.json()) == {"error", "message"}
    assert str(tmp_path) not in response.text


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


def test_a_launch_that_loses_the_lock_race_is_409(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path, ingest_bin=_fake_bin(tmp_path, "race"))) as client:
        response = _start(client, {"source": "gmail_api"})
        assert response.status_code == 409
        assert response.json() == {
            "error": "run_active",
            "message": "another ingester started first; wait for it or cancel it",
        }
        wait_for(lambda: not client.get("/api/status").json()["ingest_lock_held"], timeout=30)


def test_the_entry_point_serves_and_stops_on_sigint(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = ingester_env(GMAIL_STATS_VIEWER_PORT="1", GMAIL_STATS_DB=str(tmp_path / "other.db"))
    server = subprocess.Popen(
        [sys.executable, "-m", "viewer", "--port", str(port), "--db", str(db_path)],  # flags override the env
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def answer() -> dict[str, Any] | None:
            try:
                status: dict[str, Any] = httpx.get(f"http://127.0.0.1:{port}/api/status", timeout=2).json()
                return status
            except httpx.HTTPError:
                return None

        assert wait_for(answer, timeout=60, interval=0.1)["db"] == "ready"
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
    assert not (tmp_path / "other.db").exists()
