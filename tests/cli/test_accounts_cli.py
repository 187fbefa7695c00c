"""Accounts from the command line: two mailboxes of the fake Google scanned and imported side by side, each exact in
its own database, one ingester per account at a time while the other account's run proceeds; `account` settings."""

from __future__ import annotations

import signal
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from shared.accounts import account_names
from tests.conftest import run_cli
from tests.fakes.mailbox import Mailbox
from tests.fakes.takeout import write_takeout
from tests.support.scan import GoogleSetup, fake_google, runs, sender_counts, wait_for


def _two_mailboxes(g: GoogleSetup) -> Mailbox:
    return g.add_account("b", 90, seed=23, address="B.Person@example.com")


def _setting(db: Path, key: str) -> str | None:
    with closing(sqlite3.connect(db)) as conn:
        row = conn.execute("SELECT value FROM sync_state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def test_two_accounts_scan_side_by_side_each_exact(tmp_path: Path) -> None:
    with fake_google(tmp_path, 400) as g:
        box = _two_mailboxes(g)
        gate = g.google.faults.first_box_gate = threading.Event()  # the default account's scan lasts until released
        slow = g.popen()
        try:
            wait_for(lambda: g.google.calls.get("list"), timeout=60)
            # The same account is refused while its scan runs (exit 75, the lock) ...
            again = g.scan()
            assert again.returncode == 75, again.stderr
            assert "another ingester is already running" in again.stderr
            # ... while account b's scan runs and ends beside it.
            other = g.scan("--account", "b")
            assert other.returncode == 0, other.stderr
            assert runs(g.db)[-1]["state"] == "running"
        finally:
            gate.set()
            _out, err = slow.communicate(timeout=120)
        assert slow.returncode == 0, err
        b_db = tmp_path / "stats.b.db"
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        assert sender_counts(b_db) == box.expected_counts()
        assert [r["state"] for r in runs(g.db)] == ["done"] and [r["state"] for r in runs(b_db)] == ["done"]
        # The address each scan learnt from its profile names the account.
        assert _setting(g.db, "gmail_address") == "someone@example.com"
        assert _setting(b_db, "gmail_address") == "b.person@example.com"
        assert account_names(g.db) == ["default", "b"]
        listed = run_cli("account", "--list", "--db", g.db)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines() == [
            "default\tsomeone@example.com\trefresh off",
            "b\tb.person@example.com\trefresh off",
        ]


def test_takeout_import_goes_to_the_named_account(tmp_path: Path) -> None:
    with fake_google(tmp_path, 50) as g:
        box = _two_mailboxes(g)
        kept = [box.messages[i] for i in box.listed(include_spam_trash=False)]
        mbox = tmp_path / "b.mbox"
        write_takeout(mbox, [(m, False) for m in kept])
        done = run_cli("import", mbox, "--db", g.db, "--account", "b", "--quiet")
        assert done.returncode == 0, done.stderr
        assert not g.db.exists()  # the default account was never touched
        b_db = tmp_path / "stats.b.db"
        assert sum(sender_counts(b_db).values()) == len(kept)
        # A Takeout-only account is told its address once; the refresh interval is set the same way.
        told = run_cli("account", "--db", g.db, "--account", "b", "--address", "Old@Example.com", "--refresh", "daily")
        assert told.returncode == 0, told.stderr
        assert told.stdout == "b\told@example.com\trefresh daily\n"
        assert (_setting(b_db, "gmail_address"), _setting(b_db, "refresh")) == ("old@example.com", "daily")
        refused = run_cli("account", "--db", g.db, "--account", "b", "--address", "not an address")
        assert refused.returncode == 2 and "is not an email address" in refused.stderr
        bad = run_cli("runs", "--db", g.db, "--account", "../x")
        assert bad.returncode == 2 and "cannot name an account" in bad.stderr
        listing = run_cli("runs", "--db", g.db, "--account", "b")
        assert listing.returncode == 0 and listing.stdout.startswith("#1 mbox done")


def test_resume_hint_names_the_account(tmp_path: Path) -> None:
    with fake_google(tmp_path, 30) as g:
        _two_mailboxes(g)
        g.google.faults.list_delay_seconds = 2
        proc = g.popen("--account", "b")
        b_db = tmp_path / "stats.b.db"
        try:
            wait_for(lambda: _has_a_run(b_db), timeout=60, what="account b's run row")
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.communicate()
        assert "gmail-stats scan --resume 1" in err and "--account b" in err, err


def _has_a_run(db: Path) -> bool:
    """The file exists and its migration has committed a run row (the tables come a moment after the file)."""
    try:
        return db.exists() and bool(runs(db))
    except sqlite3.OperationalError:
        return False


def test_an_unattended_scan_never_waits_for_consent(tmp_path: Path) -> None:
    """The cron line's scan: without a usable token cache it fails at once, `auth_required`, asking nobody."""
    with fake_google(tmp_path, 20, tokens=False) as g:
        result = g.scan("--unattended", GMAIL_STATS_AUTH_TIMEOUT="600")
        assert result.returncode == 1, result.stderr
        assert "needs consent" in result.stderr and "http" not in result.stdout  # no consent link printed
        failed = runs(g.db)[-1]
        assert (failed["state"], failed["error_kind"], failed["auth_url"]) == ("failed", "auth_required", None)
        assert g.google.auth_requests == []
