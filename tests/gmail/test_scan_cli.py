"""The real `gmail-stats scan` process against the fake Google: exact counts, history re-scans, error kinds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.support.scan import fake_google, runs, sender_counts


def test_full_scan_is_exact_then_rescan_uses_history(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1500) as g:
        first = g.scan()
        assert first.returncode == 0, first.stderr
        expected = g.google.mailbox.expected_counts()
        assert sender_counts(g.db) == expected
        run = runs(g.db)[-1]
        listed = len(g.google.mailbox.listed(include_spam_trash=False))
        assert (run["state"], run["outcome"], run["source"]) == ("done", "complete", "gmail_api")
        assert run["messages_seen"] == run["messages_new"] == listed == sum(expected.values())
        assert run["total_estimate"] == 1500 and run["resume_token"] is None
        assert g.google.calls["batch"] == -(-listed // 50)  # every message fetched once, 50 per batch

        before = dict(g.google.calls)
        second = g.scan()
        assert second.returncode == 0, second.stderr
        assert "history listing" in second.stderr
        assert sender_counts(g.db) == expected
        assert runs(g.db)[-1]["messages_new"] == 0
        spent = {k: v - before.get(k, 0) for k, v in g.google.calls.items() if v != before.get(k, 0)}
        assert spent == {"profile": 1, "history": 1}  # an unchanged mailbox: two API calls

        added = g.google.mailbox.add(30, labels=("INBOX", "UNREAD"))
        third = g.scan()
        assert third.returncode == 0, third.stderr
        assert runs(g.db)[-1]["messages_new"] == 30
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        with sqlite3.connect(g.db) as conn:
            unread = conn.execute("SELECT count(*) FROM seen_mails WHERE unread = 1").fetchone()[0]
        conn.close()
        assert unread >= len(added)


def test_expired_history_and_full_flag_list_everything_again(tmp_path: Path) -> None:
    with fake_google(tmp_path, 700) as g:
        assert g.scan().returncode == 0
        g.google.mailbox.add(12)
        g.google.faults.history_expired = True
        result = g.scan()
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert run["messages_new"] == 12 and run["outcome"] == "complete"
        assert "expired" in json.loads(str(run["warnings_tail"]))[0]
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        gets = g.google.calls["get"]
        full = g.scan("--full")
        assert full.returncode == 0 and "full listing" in full.stderr
        assert g.google.calls["get"] == gets  # known ids are never fetched again
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()


def test_deleted_messages_are_skipped_with_a_warning(tmp_path: Path) -> None:
    with fake_google(tmp_path, 400) as g:
        gone = g.google.mailbox.listed(include_spam_trash=False)[5:8]
        g.google.faults.deleted.update(gone)
        result = g.scan()
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert (run["state"], run["outcome"], run["warnings_count"]) == ("done", "complete", 3)
        expected = g.google.mailbox.expected_counts()
        for gmail_id in gone:
            expected[g.google.mailbox.messages[gmail_id].sender_key] -= 1
        assert sender_counts(g.db) == {k: v for k, v in expected.items() if v}


def test_quota_storms_and_5xx_still_give_exact_counts(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1000) as g:
        g.google.faults.storm_429_rate = 0.15
        g.google.faults.error_5xx_rate = 0.1
        g.google.faults.drop_batch_rate = 0.05
        g.google.faults.stall_rate = 0.03  # answers after the client's timeout
        g.google.faults.stall_seconds = 2.5
        # About a third of the calls fail, so 15 attempts leave ~1e-7 odds that a message exhausts its budget.
        result = g.scan("--verbose", GMAIL_STATS_HTTP_TIMEOUT="1", GMAIL_STATS_RETRY_ATTEMPTS="15")
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert (run["state"], run["outcome"]) == ("done", "complete")
        assert int(run["warnings_count"]) > 0
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        with sqlite3.connect(g.db) as conn:
            rows = conn.execute("SELECT count(*), count(DISTINCT mail_id) FROM seen_mails").fetchone()
        conn.close()
        assert rows[0] == rows[1] == sum(g.google.mailbox.expected_counts().values())


def test_ids_failing_past_the_budget_make_a_partial_run_retried_next_time(tmp_path: Path) -> None:
    with fake_google(tmp_path, 300) as g:
        stuck = g.google.mailbox.listed(include_spam_trash=False)[10:12]
        g.google.faults.always_fail.update(stuck)
        result = g.scan(GMAIL_STATS_RETRY_ATTEMPTS="3")
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert (run["state"], run["outcome"], run["messages_skipped"]) == ("done", "partial", 2)
        with sqlite3.connect(g.db) as conn:
            pending = sorted(r[0] for r in conn.execute("SELECT gmail_id FROM gmail_retry"))
        conn.close()
        assert pending == sorted(stuck)
        g.google.faults.always_fail.clear()
        again = g.scan()
        assert again.returncode == 0, again.stderr
        run = runs(g.db)[-1]
        assert (run["outcome"], run["messages_new"]) == ("complete", 2)
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()


def test_persistent_failures_fail_the_run_with_a_kind(tmp_path: Path) -> None:
    with fake_google(tmp_path, 50) as g:
        g.google.faults.error_5xx_rate = 1.0
        result = g.scan(GMAIL_STATS_RETRY_ATTEMPTS="3")
        assert result.returncode == 1
        assert (runs(g.db)[-1]["state"], runs(g.db)[-1]["error_kind"]) == ("failed", "gmail_api")
        assert "--resume" in result.stderr
        g.google.faults.error_5xx_rate = 0.0
        g.google.faults.storm_429_rate = 1.0
        limited = g.scan(GMAIL_STATS_RETRY_ATTEMPTS="3")
        assert limited.returncode == 1
        assert (runs(g.db)[-1]["state"], runs(g.db)[-1]["error_kind"]) == ("failed", "rate_limited")


def test_missing_credentials_says_how_to_make_them(tmp_path: Path) -> None:
    with fake_google(tmp_path, 10) as g:
        g.credentials.unlink()
        result = g.scan()
        assert result.returncode == 1
        assert "Desktop" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        run = runs(g.db)[-1]
        assert (run["state"], run["error_kind"]) == ("failed", "missing_credentials")


def test_scan_respects_the_lock(tmp_path: Path) -> None:
    import fcntl

    with fake_google(tmp_path, 10) as g, open(f"{g.db}.ingest.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = g.scan()
        assert result.returncode == 75
        assert "another ingester is already running" in result.stderr
