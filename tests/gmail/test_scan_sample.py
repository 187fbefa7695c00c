"""A first full scan in random order: listed first, fetched by a seeded permutation of whole threads, resumed
exactly after `kill -9` or SIGTERM at any point, and estimated while it runs (`/api/estimates`)."""

from __future__ import annotations

import random
import signal
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ingester.gmail.scan_sample import draw_order
from tests.fakes.mailbox import TYPICAL
from tests.support.scan import GoogleSetup, fake_google, last_run, runs, sender_counts, wait_for
from tests.support.viewer import make_settings, viewer

QUOTA = "500"  # both sides: ~100 messages/s, so a scan lasts long enough to be interrupted
MESSAGES = 2000
# At a kill, at most the two chunks in flight (500 ids each) were fetched without being committed.
IN_FLIGHT = 1000


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def _when(g: GoogleSetup, test: Any, what: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        run = last_run(g.db)
        return run if run and test(run) else None

    return wait_for(check, timeout=90, what=what)


def _fetching(at_least: int) -> Any:
    return lambda run: run["resume_token"] == "sample:fetch" and int(run["messages_new"]) >= at_least


def _finish_and_check(g: GoogleSetup, run_id: int, *, lists_again: bool) -> None:
    g.google.bucket = None  # the rest at full speed
    lists_before = g.google.calls.get("list", 0)
    result = g.scan("--resume", str(run_id))
    assert result.returncode == 0, result.stderr
    assert "random order" in result.stderr
    final = runs(g.db)
    assert [(r["state"], r["outcome"]) for r in final] == [("done", "complete")]
    listed = len(g.google.mailbox.listed(include_spam_trash=False))
    assert final[0]["messages_seen"] == listed
    assert sender_counts(g.db) == g.google.mailbox.expected_counts()
    assert (g.google.calls.get("list", 0) > lists_before) == lists_again
    # Nothing fetched again beyond what was in flight at the kill; the order and its listing are gone.
    served = g.google.served
    wanted = set(g.google.mailbox.listed(include_spam_trash=False))
    assert wanted <= set(served)
    assert sum(n - 1 for i, n in served.items() if i in wanted) <= IN_FLIGHT
    assert _rows(g.db, "SELECT count(*) FROM scan_listed") == [(0,)]
    assert _rows(g.db, "SELECT count(*) FROM scan_sample") == [(0,)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_at_a_random_point_then_resume_is_exact(tmp_path: Path, seed: int) -> None:
    at_least = random.Random(seed).randrange(50, 1500)
    with fake_google(tmp_path, MESSAGES, quota=float(QUOTA), mix=TYPICAL) as g:
        process = g.popen(GMAIL_STATS_QUOTA_UNITS_PER_SEC=QUOTA, GMAIL_STATS_FIRST_SCAN_SEED=str(seed))
        try:
            run = _when(g, _fetching(at_least), f"{at_least} messages counted in random order")
            process.kill()
        finally:
            process.communicate(timeout=60)
        # The order is whole threads in one permutation: each thread one slot, the slots 0..T-1.
        slots = _rows(
            g.db, "SELECT coalesce(thread_id, gmail_id), count(DISTINCT slot), min(slot) FROM scan_listed GROUP BY 1"
        )
        assert all(distinct == 1 for _, distinct, _ in slots)
        assert sorted(first for _, _, first in slots) == list(range(len(slots)))
        assert {key: first for key, _, first in slots} == draw_order([k for k, _, _ in slots], seed=seed)
        _finish_and_check(g, int(run["run_id"]), lists_again=False)


@pytest.mark.slow
def test_kill_9_while_listing_then_resume_lists_on_from_its_page(tmp_path: Path) -> None:
    with fake_google(tmp_path, MESSAGES, mix=TYPICAL) as g:
        g.google.faults.list_delay_seconds = 0.3
        process = g.popen()
        try:
            run = _when(g, lambda r: str(r["resume_token"] or "").startswith("sample:list:p"), "a page listed")
            process.kill()
        finally:
            process.communicate(timeout=60)
        listed = _rows(g.db, "SELECT count(*), count(slot) FROM scan_listed")[0]
        assert listed[0] >= 500 and listed[1] == 0  # ids kept, no order yet: the listing was not finished
        assert g.google.served == {}  # nothing fetched before every id is listed
        g.google.faults.list_delay_seconds = 0.0
        _finish_and_check(g, int(run["run_id"]), lists_again=True)


@pytest.mark.slow
def test_a_cancelled_scan_keeps_estimates_marked_as_such_until_the_scan_completes(tmp_path: Path) -> None:
    with fake_google(tmp_path, MESSAGES, quota=float(QUOTA), mix=TYPICAL) as g:
        process = g.popen(GMAIL_STATS_QUOTA_UNITS_PER_SEC=QUOTA)
        try:
            run = _when(g, _fetching(1200), "two chunks settled in random order")
            process.send_signal(signal.SIGTERM)
        finally:
            process.communicate(timeout=60)
        assert runs(g.db)[-1]["state"] == "cancelled"
        truth = Counter(g.google.mailbox.expected_counts())
        settings = make_settings(tmp_path, db=g.db)
        with viewer(settings) as client:
            body = client.get("/api/estimates", params={"limit": 1000}).json()
            assert (body["estimated"], body["phase"], body["sample"]["run_state"]) == (True, "stopped", "cancelled")
            assert 0 < body["sample"]["share_of_mailbox"] < 1
            rows = body["rows"]
            assert rows and all(set(r) >= {"estimated_messages", "estimated_rank"} for r in rows)
            top = rows[0]
            assert top["key"] in dict(truth.most_common(5))
            counted = sender_counts(g.db)
            # An estimate is not the count so far: it extrapolates to the whole mailbox.
            assert top["estimated_messages"]["estimate"] > counted[top["key"]]
            low, high = top["estimated_messages"]["low_95"], top["estimated_messages"]["high_95"]
            assert low <= top["estimated_messages"]["estimate"] <= high
            csv = client.get("/api/estimates.csv").text.splitlines()
            assert csv[0].startswith("key,estimated_rank,") and all(
                c.startswith("estimated_") for c in csv[0].split(",")[1:]
            )
            assert len(csv) == 1 + len(rows)  # every sender seen so far, as the JSON's rows
        _finish_and_check(g, int(run["run_id"]), lists_again=False)
        with viewer(settings) as client:
            done = client.get("/api/estimates").json()
            assert done == {"estimated": False, "phase": "exact", "by": "sender", "sample": None, "rows": []}
            assert client.get("/api/estimates.csv").text.splitlines() == [csv[0]]  # no estimates left
