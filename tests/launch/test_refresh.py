"""Always fresh: the viewer starts an account's incremental scan once per interval through its launcher, lock and
run records, never while a run is active, and a revoked token ends the unattended scan `failed/auth_required`,
which the page shows (and the refresh waits for the person)."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import ingester_env, run_cli
from tests.support.scan import GoogleSetup, fake_google, runs, sender_counts, wait_for
from tests.support.viewer import BASE_URL, make_settings
from viewer.app import create_app
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command
from viewer.launch.refresh import Refresher


def _backdate(db: Path, seconds: int) -> None:
    """The last scan started `seconds` earlier, as if the interval had passed (the test writes, never the viewer)."""
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE ingest_runs SET started_at_unix = started_at_unix - ?, finished_at_unix = finished_at_unix - ?"
            " WHERE run_id = (SELECT max(run_id) FROM ingest_runs)",
            (seconds, seconds),
        )


def _client(g: GoogleSetup, tmp_path: Path) -> TestClient:
    # The timer never fires by itself here: each test ticks it, so what is due is decided by the rows alone.
    settings = make_settings(tmp_path, db=g.db, refresh_check_seconds=3600)
    launcher = ProcessLauncher(
        ingest_command=default_ingest_command(),
        db_path=g.db,
        import_dir=settings.import_dir,
        environ=ingester_env(**g.env()),
    )
    return TestClient(create_app(settings, launcher=launcher), base_url=BASE_URL)


def _refresher(client: TestClient) -> Refresher:
    app: Any = client.app
    while not isinstance(getattr(getattr(app, "state", None), "refresher", None), Refresher):
        app = app.app
    refresher: Refresher = app.state.refresher
    return refresher


def _finished(db: Path, run_id: int) -> dict[str, Any] | None:
    found = [r for r in runs(db) if r["run_id"] == run_id and r["state"] in ("done", "failed")]
    return found[0] if found else None


def test_refresh_fires_once_per_interval_and_never_beside_a_run(tmp_path: Path) -> None:
    with fake_google(tmp_path, 200) as g:
        assert g.scan().returncode == 0
        with _client(g, tmp_path) as client:
            refresher = _refresher(client)
            account = client.get("/api/accounts").json()["accounts"][0]
            assert (account["refresh"], account["refresh_offered"], account["next_refresh_unix"]) == ("off", True, None)
            assert refresher.tick() == [None]  # off by default

            changed = client.post(
                "/api/account/settings",
                json={"refresh": "hourly"},
                headers={"X-Gmail-Stats-Csrf": client.get("/api/status").json()["csrf_token"]},
            )
            assert changed.status_code == 200, changed.text
            first = runs(g.db)[0]
            assert changed.json()["next_refresh_unix"] == first["started_at_unix"] + 3600
            assert refresher.tick() == [None]  # the hour has not passed

            _backdate(g.db, 3601)
            before = dict(g.google.calls)
            [run_id] = refresher.tick()
            assert run_id == 2
            done = wait_for(lambda: _finished(g.db, 2), timeout=120, what="the refresh scan")
            assert (done["state"], done["source"], done["launch_token"] is not None) == ("done", "gmail_api", True)
            spent = {k: v - before.get(k, 0) for k, v in g.google.calls.items() if v != before.get(k, 0)}
            assert spent == {"profile": 1, "history": 1}  # an unchanged mailbox: 3 API units
            assert refresher.tick() == [None]  # once per interval: the next is an hour after this one

            # Due again, but a scan started in a terminal is running: no second ingester.
            _backdate(g.db, 3601)
            gate = g.google.faults.first_box_gate = threading.Event()
            terminal = g.popen()
            try:
                wait_for(lambda: len(runs(g.db)) == 3 and client.get("/api/status").json()["ingest_lock_held"])
                assert refresher.tick() == [None]
            finally:
                gate.set()
                terminal.communicate(timeout=120)
            assert [r["state"] for r in runs(g.db)] == ["done", "done", "done"]
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()


def test_a_revoked_token_ends_the_refresh_auth_required_on_the_page(tmp_path: Path) -> None:
    with fake_google(tmp_path, 40) as g:
        assert g.scan().returncode == 0
        assert run_cli("account", "--refresh", "daily", "--db", g.db).returncode == 0
        _backdate(g.db, 86401)
        g.google.revoke_refresh_tokens()
        with _client(g, tmp_path) as client:
            refresher = _refresher(client)
            [run_id] = refresher.tick()
            assert run_id is not None
            failed = wait_for(lambda: _finished(g.db, run_id), timeout=120, what="the refresh scan")
            assert (failed["state"], failed["error_kind"], failed["auth_url"]) == ("failed", "auth_required", None)
            assert g.google.auth_requests == []  # nobody was asked: unattended scans never wait for consent
            last = client.get("/api/status").json()["last_run"]
            assert (last["run_id"], last["state"], last["error_kind"]) == (run_id, "failed", "auth_required")
            account = client.get("/api/accounts").json()["accounts"][0]
            assert (account["needs_consent"], account["next_refresh_unix"]) == (True, None)
            _backdate(g.db, 86401)
            assert refresher.tick() == [None]  # no retry until the person starts a scan and gives consent
