"""Launching ingesters through the API: the fixed argv, the real ingester end to end, the lock and a lost lock race
(409), spawn failures, the request's validation, and the viewer's entry point. Cancelling and watching runs:
test_viewer_cancel.py.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.launch_request import LaunchCommand, LaunchRequest
from shared.lock import IngestLock
from tests.conftest import REPO_ROOT, ingester_env
from tests.launch.launching import fake_bin, finished, start, write_imports
from tests.support.importing import query
from tests.support.viewer import csrf_headers, make_settings, mbox_bytes, seed, viewer, wait_for
from viewer.launch.launch_process import build_argv

pytestmark = pytest.mark.slow


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
    write_imports(tmp_path, {"Takeout/Mail/all.mbox": mbox_bytes(20)})
    (tmp_path / "imports" / "latest.mbox").symlink_to(tmp_path / "imports" / "Takeout/Mail/all.mbox")
    settings = make_settings(tmp_path)
    with viewer(settings) as client:
        response = start(client, {"source": "mbox", "path": "latest.mbox"})
        assert response.status_code == 202, response.text
        run = wait_for(lambda: finished(client, response.json()["run_id"]))
        assert (run["state"], run["messages_new"]) == ("done", 20)
    # What the ingester was handed (and recorded): the checked target, not the link.
    assert query(settings.db, "SELECT mbox_path FROM ingest_runs") == [
        (str((tmp_path / "imports/Takeout/Mail/all.mbox").resolve()),)
    ]


def test_import_from_the_api_completes_with_the_real_ingester(tmp_path: Path) -> None:
    write_imports(tmp_path, {"Takeout/Mail/all.mbox": mbox_bytes(300)})
    with viewer(make_settings(tmp_path)) as client:
        response = start(client, {"source": "mbox", "path": "Takeout/Mail/all.mbox"})
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        run = wait_for(lambda: finished(client, run_id))
        assert (run["state"], run["outcome"], run["messages_new"], run["owned"]) == ("done", "complete", 300, True)
        assert run["mbox_path"] == "Takeout/Mail/all.mbox"  # relative to the import folder, never the host path
        senders = client.get("/api/senders").json()
        assert (senders["total"], senders["total_messages"]) == (7, 300)
        assert client.get("/api/status").json()["db"] == "ready"
        assert client.get(f"/api/runs/{run_id}/log").json() == {"run_id": run_id, "lines": []}  # --quiet
        # A complete import cannot be resumed; a new import of the same file adds nothing.
        again = start(client, {"source": "mbox", "resume_run_id": run_id})
        assert again.status_code == 422 and again.json()["error"] == "bad_resume"


def test_409_while_a_terminal_ingester_holds_the_lock(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    write_imports(tmp_path, {"a.mbox": mbox_bytes(3)})
    with viewer(make_settings(tmp_path)) as client, IngestLock(db_path):
        response = start(client, {"source": "mbox", "path": "a.mbox"})
        scan = start(client, {"source": "gmail_api"})
        status = client.get("/api/status").json()
    assert response.status_code == 409
    assert response.json() == {
        "error": "run_active",
        "message": "an ingester is already running; wait for it or cancel it",
    }
    assert scan.status_code == 409
    assert status["ingest_lock_held"] is True


def test_spawn_failures_are_500_with_a_hint(tmp_path: Path) -> None:
    write_imports(tmp_path, {"a.mbox": mbox_bytes(1)})
    with viewer(make_settings(tmp_path, ingest_bin=tmp_path / "no-such-binary")) as client:
        missing = start(client, {"source": "mbox", "path": "a.mbox"})
    with viewer(make_settings(tmp_path, ingest_bin=Path("/bin/false"))) as client:
        dies = start(client, {"source": "gmail_api"})
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
    write_imports(tmp_path, {"a.mbox": mbox_bytes(1), "notes.mbox": b"just some text\n", "folder.mbox/x": b""})
    (tmp_path / "imports" / "escape.mbox").symlink_to(outside)
    (tmp_path / "imports" / "escape-dir").symlink_to(tmp_path / "outdir")
    with viewer(make_settings(tmp_path, ingest_bin=Path("/bin/false"))) as client:
        response = client.post("/api/runs", json=body, headers=csrf_headers(client))
    assert response.status_code == 422, response.text
    assert response.json()["error"] == kind
    assert set(response.json()) == {"error", "message"}
    assert str(tmp_path) not in response.text


def test_a_launch_that_loses_the_lock_race_is_409(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path, ingest_bin=fake_bin(tmp_path, "race"))) as client:
        response = start(client, {"source": "gmail_api"})
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
