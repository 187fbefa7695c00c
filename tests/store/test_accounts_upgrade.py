"""Upgrade: a database of before accounts is account one (`default`) with no step by the person, its runs and
hidden senders intact, and the viewer leaves its files as they were."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.support.viewer import SENDERS, csrf_headers, file_digests, make_settings, seed, viewer


def test_a_database_of_today_becomes_the_first_account(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    seed(db, finished_runs=3)
    before = file_digests(db)
    with viewer(make_settings(tmp_path)) as client:
        listed = client.get("/api/accounts").json()["accounts"]
        assert [(a["name"], a["db"], a["gmail_address"], a["refresh"]) for a in listed] == [
            ("default", "ready", None, "off")
        ]
        assert listed[0]["updated_at_unix"] == 1_700_000_022  # the last of its finished runs
        plain, named = client.get("/api/runs").json(), client.get("/api/runs", params={"account": "default"}).json()
        assert [r["run_id"] for r in plain["runs"]] == [3, 2, 1] == [r["run_id"] for r in named["runs"]]
        assert {r["state"] for r in plain["runs"]} == {"done"}
        # Hidden senders work as before: the set the page registers leaves them out of this account's table.
        hidden = ["news@shop.example", "alice@example.com"]
        registered = client.post("/api/hidden", json={"senders": hidden}, headers=csrf_headers(client)).json()
        for params in ({}, {"account": "default"}):
            page = client.get("/api/senders", params={**params, "hidden": registered["hidden"], "limit": 50}).json()
            assert sorted(s["sender"] for s in page["senders"]) == sorted(r[0] for r in SENDERS if r[0] not in hidden)
        status = client.get("/api/status").json()
        assert (status["db"], status["last_run"]["run_id"]) == ("ready", 3)
    assert file_digests(db) == before  # nothing was written, nothing renamed
    terminal = run_cli("runs", "--db", db)
    assert terminal.returncode == 0 and terminal.stdout.splitlines()[0].startswith("#3 mbox done")
    assert run_cli("runs", "--db", db, "--account", "default").stdout == terminal.stdout
