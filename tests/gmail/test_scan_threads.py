"""Conversation mailboxes: `threads.get` through the real client libraries, and whole scans that stay exact.

Scans killed mid-conversation or mid-history and resumed: test_scan_processes.py."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from ingester.gmail.auth import GoogleAccess
from ingester.gmail.gmail import METADATA_HEADERS
from ingester.gmail.pacing import RetryPolicy
from ingester.gmail.scan import run_scan
from ingester.gmail.scan_types import ScanRequest, ScanTuning
from ingester.records.unsubscribe import parse_unsubscribe
from ingester.runs.session import ingest_session
from ingester.store.rollups import month_of
from shared.timeutil import system_clock
from tests.conftest import run_cli
from tests.fakes.google import COSTS
from tests.fakes.mailbox import MAILING_LISTS, TYPICAL, Mailbox
from tests.fakes.takeout import write_takeout
from tests.support.rollups import assert_rollups_exact
from tests.support.scan import GoogleSetup, fake_google, runs, sender_counts


def _units(g: GoogleSetup) -> int:
    return sum(COSTS[name] * count for name, count in g.google.calls.items() if name in COSTS)


def _multi(box: Mailbox, *, at_least: int) -> list[str]:
    """Listed ids in threads of at least `at_least` messages, listing order."""
    return [i for i in box.listed(include_spam_trash=False) if len(box.threads[box.messages[i].thread_id]) >= at_least]


def _access(g: GoogleSetup) -> GoogleAccess:
    return GoogleAccess(
        credentials_path=g.credentials,
        tokens_path=g.tokens,
        oauth_bind="127.0.0.1",
        oauth_port=0,
        auth_timeout=1,
        api_endpoint=g.server.base_url,
        http_timeout=10,
        note=lambda text: None,
    )


def _rows(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT count(*), count(DISTINCT mail_id) FROM seen_mails WHERE counted = 1").fetchone()
    conn.close()
    return int(rows[0]), int(rows[1])


def test_threads_get_with_the_real_client(tmp_path: Path) -> None:
    with fake_google(tmp_path, 600, mix=MAILING_LISTS) as g:
        box = g.google.mailbox
        access = _access(g)
        client = access.connect(on_consent_url=lambda url: None, cancel=threading.Event())()
        try:
            page = client.list_messages(page_token=None)
            assert page.thread_ids == tuple(box.messages[i].thread_id for i in page.ids)
            long = max(box.threads, key=lambda t: len(box.threads[t]))
            g.google.faults.deleted.add(box.threads[long][0])
            result = client.get_threads([long, "ffff0000", long])
        finally:
            client.close()
        assert g.google.calls["batch"] == 1 and g.google.calls["thread"] == 2
        assert result.failures["ffff0000"].status == 404
        (thread,) = result.threads
        assert [m.gmail_id for m in thread.messages] == box.threads[long][1:]  # deleted one is gone, oldest first
        first = box.messages[box.threads[long][1]]
        assert thread.messages[0].label_ids == first.label_ids
        assert {name for name, _ in thread.messages[0].headers} <= set(METADATA_HEADERS)


def test_conversations_are_counted_exactly_for_fewer_units(tmp_path: Path) -> None:
    with fake_google(tmp_path, 3000, mix=TYPICAL) as g:
        box = g.google.mailbox
        listed = len(box.listed(include_spam_trash=False))
        assert any(m.excluded for t in box.threads.values() for m in map(box.messages.get, t) if m and len(t) > 2)
        result = g.scan()
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert (run["outcome"], run["messages_seen"], run["messages_new"]) == ("complete", listed, listed)
        assert run["messages_excluded"] == 0  # Spam/Trash inside fetched threads: never listed, never counted
        assert sender_counts(g.db) == box.expected_counts() and _rows(g.db) == (listed, listed)
        assert g.google.calls["thread"] > 100 and _units(g) < 4.2 * listed
        # A message arriving in an old conversation comes through the history feed, once.
        arrivals = box.add(40)
        again = g.scan()
        assert again.returncode == 0, again.stderr
        assert runs(g.db)[-1]["messages_new"] == sum(not m.excluded for m in arrivals)
        assert sender_counts(g.db) == box.expected_counts()


def test_thread_fetched_senders_get_unsubscribe_targets_and_month_counts(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1500, mix=MAILING_LISTS) as g:
        box = g.google.mailbox
        countable = [box.messages[i] for i in box.order if not box.messages[i].excluded]
        result = g.scan()
        assert result.returncode == 0, result.stderr
        # Nearly every message came whole with its conversation: threads.get carries the same headers.
        assert g.google.calls["thread"] > 0 and g.google.calls["get"] < len(countable) // 4
        months: dict[tuple[str, str], list[int]] = {}
        latest: dict[str, tuple[int, set[tuple[str | None, str | None, bool]]]] = {}
        for m in countable:
            date = m.internal_date_ms // 1000
            tally = months.setdefault((m.sender_key, str(month_of(date))), [0, 0])
            tally[0] += 1
            tally[1] += m.size_estimate
            headers = dict(m.headers)
            targets = parse_unsubscribe(headers.get("List-Unsubscribe"), headers.get("List-Unsubscribe-Post"))
            if not targets.any:
                continue
            best = latest.get(m.sender_key)
            target = (targets.web, targets.mailto, targets.one_click)
            if best is None or date > best[0]:
                latest[m.sender_key] = (date, {target})
            elif date == best[0]:
                best[1].add(target)  # same second: either message's targets may be the newest
        with sqlite3.connect(g.db) as conn:
            stored_months = {
                (sender, month): [n, size]
                for sender, month, n, size in conn.execute("SELECT sender, month, messages, bytes FROM sender_months")
            }
            stored = conn.execute(
                "SELECT sender, unsubscribe_web, unsubscribe_mailto, unsubscribe_unix, one_click FROM senders"
            ).fetchall()
        conn.close()
        assert stored_months == months
        with_targets = {row[0]: row for row in stored if row[1] is not None or row[2] is not None}
        assert set(with_targets) == set(latest)
        assert any(row[1] is not None and row[4] == 1 for row in with_targets.values())  # RFC 8058 one-click
        for sender, (date, choices) in latest.items():
            _, web, mailto, unix, one_click = with_targets[sender]
            assert unix == date and (web, mailto, bool(one_click)) in choices
        assert_rollups_exact(g.db)


def test_storms_5xx_deletions_and_moves_inside_threads(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1500, mix=MAILING_LISTS) as g:
        box, faults = g.google.mailbox, g.google.faults
        in_threads = _multi(box, at_least=4)
        gone, trashed = set(in_threads[3:9]), set(in_threads[20:27])
        faults.deleted.update(gone)
        faults.trashed.update(trashed)  # moved to Trash between list and get: excluded, as today
        faults.storm_429_rate = 0.15
        faults.error_5xx_rate = 0.1
        faults.drop_batch_rate = 0.05
        result = g.scan("--verbose", GMAIL_STATS_RETRY_ATTEMPTS="15")
        assert result.returncode == 0, result.stderr
        run = runs(g.db)[-1]
        assert (run["state"], run["outcome"], run["messages_excluded"]) == ("done", "complete", len(trashed))
        assert "was deleted before it could be read" in result.stderr
        expected = box.expected_counts()
        for gmail_id in gone | trashed:
            expected[box.messages[gmail_id].sender_key] -= 1
        assert sender_counts(g.db) == {k: v for k, v in expected.items() if v}
        listed = len(box.listed(include_spam_trash=False))
        assert _rows(g.db) == (listed - len(gone | trashed),) * 2
        assert g.google.calls["thread"] > 0


def test_after_a_takeout_import_known_messages_are_not_fetched_again(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1200, mix=TYPICAL) as g:
        box = g.google.mailbox
        oldest = [box.messages[i] for i in box.order[-600:]]
        # Half carry their Gmail id in the postmark, half are matched only by Message-ID after fetching.
        write_takeout(tmp_path / "mail.mbox", [(m, i % 2 == 0 or m.message_id is None) for i, m in enumerate(oldest)])
        imported = run_cli("import", tmp_path / "mail.mbox", "--db", g.db)
        assert imported.returncode == 0, imported.stderr
        result = g.scan()
        assert result.returncode == 0, result.stderr
        assert sender_counts(g.db) == box.expected_counts()
        scan, mbox = (next(r for r in runs(g.db) if r["source"] == s) for s in ("gmail_api", "mbox"))
        listed = len(box.listed(include_spam_trash=False))
        assert int(scan["messages_new"]) + int(mbox["messages_new"]) == listed
        assert json.loads(str(scan["warnings_tail"])) == []


class _Recorder:
    """A `Reporter` that keeps every progress report (a real implementation of the seam, not a mock)."""

    def __init__(self) -> None:
        self.reports: list[tuple[int, int, int]] = []
        self.total: int | None = None

    def start(self, *, description: str, total: int | None, done: int) -> None:
        self.total = total

    def progress(self, *, done: int, seen: int, new: int) -> None:
        self.reports.append((done, seen, new))

    def note(self, text: str) -> None:
        pass

    def warning(self, text: str) -> None:
        pass

    def finish(self) -> None:
        pass


def test_progress_counts_messages_settled_not_calls(tmp_path: Path) -> None:
    with fake_google(tmp_path, 4000, mix=MAILING_LISTS) as g:
        access = _access(g)
        recorder = _Recorder()
        with ingest_session(g.db, clock=system_clock) as engine:
            result = run_scan(
                engine=engine,
                request=ScanRequest(),
                access=access,
                tuning=ScanTuning(
                    units_per_second=1e6,
                    workers=3,
                    retry=RetryPolicy(attempts=5, base_seconds=0.05),
                    random_first_scan=False,  # the listing's order, where threads reach across pages
                ),
                reporter=recorder,
                cancel=threading.Event(),
                clock=system_clock,
                on_consent_url=lambda url: None,
            )
        listed = len(g.google.mailbox.listed(include_spam_trash=False))
        assert result.messages_new == listed and recorder.total == 4000
        done = [d for d, _, _ in recorder.reports]
        assert done == sorted(done) and done[-1] == listed
        assert all(new <= d for d, _, new in recorder.reports)  # never more counted than shown as done
        # Long conversations settle messages of later pages early, and the bar shows them at once.
        pages = [min(500 * (i + 1), listed) for i in range(len(done))]
        assert any(d > page for d, page in zip(done, pages, strict=True))
