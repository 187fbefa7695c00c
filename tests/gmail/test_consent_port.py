"""The one consent port shared by every account: a second account's scan that needs consent while another account's
consent listens there stops at once with one line naming that account; a port held by another program says so."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from tests.conftest import ingester_env
from tests.support.net import free_port
from tests.support.scan import fake_google, last_run, runs, wait_for
from tests.support.viewer import csrf_headers, make_settings, viewer
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command


def test_a_second_accounts_consent_names_the_account_whose_consent_holds_the_port(tmp_path: Path) -> None:
    with fake_google(tmp_path, 20, tokens=False) as g:
        g.add_account("b", 10, seed=5, address="b@example.com")
        g.tokens.with_name("tokencache.b.json").unlink()  # account b needs consent too
        port = str(free_port())
        first = g.popen(GMAIL_STATS_OAUTH_PORT=port)
        try:
            wait_for(
                lambda: (run := last_run(g.db)) and run["state"] == "awaiting_auth" and run["auth_url"],
                timeout=60,
                what="the default account's consent listening",
            )
            # A long consent timeout: only failing at once, not waiting, ends this before run_cli's bound.
            second = g.scan("--account", "b", timeout=60, GMAIL_STATS_OAUTH_PORT=port, GMAIL_STATS_AUTH_TIMEOUT="600")
            assert runs(g.db)[-1]["state"] == "awaiting_auth"  # the first consent goes on waiting
        finally:
            first.terminate()
            first.communicate(timeout=60)
        assert second.returncode == 75, second.stderr
        line = f"gmail-stats: account default's consent is pending on 127.0.0.1:{port}"
        assert second.stderr.startswith(line) and "Traceback" not in second.stderr, second.stderr
        assert "finish or cancel that consent" in second.stderr
        assert "http" not in second.stdout  # no consent link that could never be answered
        failed = runs(tmp_path / "stats.b.db")[-1]
        assert (failed["state"], failed["error_kind"], failed["auth_url"]) == ("failed", "auth_required", None)
        assert "account default's consent is pending" in failed["error"]


def test_a_port_held_by_another_program_says_so_and_names_the_setting(tmp_path: Path) -> None:
    with fake_google(tmp_path, 20, tokens=False) as g, socket.socket() as foreign:
        foreign.bind(("127.0.0.1", 0))
        foreign.listen()  # accepts connections (the kernel's backlog) and never answers: not one of our listeners
        port = foreign.getsockname()[1]
        result = g.scan(timeout=60, GMAIL_STATS_OAUTH_PORT=str(port), GMAIL_STATS_AUTH_TIMEOUT="600")
        assert result.returncode == 1, result.stderr
        line = f"gmail-stats: another program holds port {port}, where the consent redirect must arrive"
        assert result.stderr.startswith(line) and "GMAIL_STATS_OAUTH_PORT" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "http" not in result.stdout
        failed = runs(g.db)[-1]
        assert (failed["state"], failed["error_kind"]) == ("failed", "auth_required")


def test_the_listener_answers_whose_consent_it_is(tmp_path: Path) -> None:
    """The owner question is answered beside the redirect, and does not end the wait."""
    with fake_google(tmp_path, 20, tokens=False) as g:
        port = free_port()
        first = g.popen("--account", "work", GMAIL_STATS_OAUTH_PORT=str(port))
        try:
            work_db = tmp_path / "stats.work.db"
            wait_for(
                lambda: (run := last_run(work_db)) and run["state"] == "awaiting_auth",
                timeout=60,
                what="account work's consent listening",
            )
            asked = httpx.get(f"http://127.0.0.1:{port}/gmail-stats/consent-owner", timeout=30)
            assert (asked.status_code, asked.json()) == (200, {"account": "work"})
            assert runs(work_db)[-1]["state"] == "awaiting_auth"
        finally:
            first.terminate()
            first.communicate(timeout=60)


def test_the_page_shows_that_line_for_a_scan_it_launched(tmp_path: Path) -> None:
    """A scan of account b started from the page, while the default account's consent waits in a terminal: its
    run ends `failed/auth_required` with that line as the error the page's run banner shows."""
    with fake_google(tmp_path, 20, tokens=False) as g:
        g.add_account("b", 10, seed=5, address="b@example.com")
        g.tokens.with_name("tokencache.b.json").unlink()
        port = str(free_port())
        settings = make_settings(tmp_path, db=g.db)
        settings.import_dir.mkdir()
        env = ingester_env(**g.env(GMAIL_STATS_OAUTH_PORT=port, GMAIL_STATS_AUTH_TIMEOUT="600"))
        launcher = ProcessLauncher(
            ingest_command=default_ingest_command(), db_path=g.db, import_dir=settings.import_dir, environ=env
        )
        first = g.popen(GMAIL_STATS_OAUTH_PORT=port)
        try:
            wait_for(lambda: (run := last_run(g.db)) and run["state"] == "awaiting_auth", timeout=60)
            with viewer(settings, launcher=launcher) as client:
                started = client.post(
                    "/api/runs", params={"account": "b"}, json={"source": "gmail_api"}, headers=csrf_headers(client)
                )
                assert started.status_code == 202, started.text

                def ended() -> dict[str, object] | None:
                    last = client.get("/api/status", params={"account": "b"}).json()["last_run"]
                    return last if last and last["state"] == "failed" else None

                failed = wait_for(ended, timeout=60, what="account b's scan ends")
        finally:
            first.terminate()
            first.communicate(timeout=60)
        assert failed["error_kind"] == "auth_required"
        assert str(failed["error"]).startswith(f"account default's consent is pending on 127.0.0.1:{port}")
