"""Accounts in the viewer, end to end through the process launcher and the fake Google serving two mailboxes:
each account's own runs, lock and launches (one ingester per account while the other's run proceeds), a Takeout
import into the account the person picks, its typed address, and the switcher's list."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import ingester_env
from tests.fakes.takeout import write_takeout
from tests.support.scan import GoogleSetup, fake_google, runs, sender_counts, wait_for
from tests.support.viewer import csrf_headers, make_settings, viewer
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command


def _launcher(g: GoogleSetup, import_dir: Path) -> ProcessLauncher:
    env = ingester_env(**g.env())
    return ProcessLauncher(ingest_command=default_ingest_command(), db_path=g.db, import_dir=import_dir, environ=env)


def _done(client: TestClient, account: str, run_id: int) -> dict[str, Any] | None:
    last = client.get("/api/status", params={"account": account}).json()["last_run"]
    return last if last and last["run_id"] == run_id and last["state"] in ("done", "failed") else None


def test_two_accounts_side_by_side_in_the_viewer(tmp_path: Path) -> None:
    with fake_google(tmp_path, 300) as g:
        box = g.add_account("b", 90, seed=23, address="b.person@example.com")
        settings = make_settings(tmp_path, db=g.db)
        settings.import_dir.mkdir()
        old = [box.messages[i] for i in box.listed(include_spam_trash=False)][:40]
        write_takeout(settings.import_dir / "old.mbox", [(m, False) for m in old])
        gate = g.google.faults.first_box_gate = threading.Event()
        with viewer(settings, launcher=_launcher(g, settings.import_dir)) as client:
            headers = csrf_headers(client)
            first = client.post("/api/runs", json={"source": "gmail_api"}, headers=headers)
            assert first.status_code == 202, first.text
            wait_for(lambda: g.google.calls.get("list"), what="the default account's scan listing")
            # The same account refuses a second ingester ...
            again = client.post("/api/runs", json={"source": "gmail_api"}, headers=headers)
            assert (again.status_code, again.json()["error"]) == (409, "run_active")
            # ... while account b's scan runs and ends beside it, each with its own runs and lock.
            other = client.post("/api/runs", params={"account": "b"}, json={"source": "gmail_api"}, headers=headers)
            assert other.status_code == 202, other.text
            b_run = other.json()["run_id"]
            done_b = wait_for(lambda: _done(client, "b", b_run), timeout=120, what="account b's scan")
            assert done_b["state"] == "done", done_b
            status = client.get("/api/status").json()
            assert status["ingest_lock_held"] and status["active_run"]["state"] == "running"
            # The row says done a moment before the ingester exits and its lock is free: a state to wait on.
            wait_for(
                lambda: not client.get("/api/status", params={"account": "b"}).json()["ingest_lock_held"],
                what="account b's ingester exits",
            )
            # A Takeout import goes to the account picked (a new one: the ingester creates its database), also
            # while the default account's scan still runs.
            imported = client.post(
                "/api/runs", params={"account": "old"}, json={"source": "mbox", "path": "old.mbox"}, headers=headers
            )
            assert imported.status_code == 202, imported.text
            wait_for(lambda: _done(client, "old", imported.json()["run_id"]), timeout=120, what="the import")
            assert client.get("/api/status").json()["active_run"]["state"] == "running"
            gate.set()
            wait_for(lambda: _done(client, "default", first.json()["run_id"]), timeout=120, what="the first scan")
            typed = client.post(
                "/api/account/settings", params={"account": "old"}, json={"address": "Old@Example.com"}, headers=headers
            )
            assert typed.status_code == 200, typed.text
            assert typed.json()["gmail_address"] == "old@example.com"
            links = client.get("/api/gmail/links", params={"account": "old"}).json()["links"]
            assert links and all(
                link["url"].startswith("https://mail.google.com/mail/?authuser=old@example.com#") for link in links
            )

            listed = client.get("/api/accounts").json()["accounts"]
            assert [(a["name"], a["gmail_address"], a["db"], a["refresh_offered"]) for a in listed] == [
                ("default", "someone@example.com", "ready", True),
                ("b", "b.person@example.com", "ready", True),
                ("old", "old@example.com", "ready", False),
            ]
            bad = client.get("/api/status", params={"account": "../etc"})
            assert (bad.status_code, bad.json()["error"]) == (404, "unknown_account")
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        assert sender_counts(tmp_path / "stats.b.db") == box.expected_counts()
        assert sum(sender_counts(tmp_path / "stats.old.db").values()) == len(old)
        assert [r["source"] for r in runs(tmp_path / "stats.old.db")] == ["mbox"]
        assert [r["source"] for r in runs(g.db)] == ["gmail_api"]
