"""`/api/estimates` over a real database the ingester's own functions wrote: listing, sampling, a whole sample
(exact, zero width), per domain, mail a Takeout import counted under the listed Gmail id, and no sample at all."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ingester.gmail.scan_sample import add_listed, fix_order, mark_done, start_sample
from ingester.records import MailRecord
from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.lock import IngestLock
from shared.runs import create_run
from shared.schema.migrations import migrate
from shared.schema.models import Source
from tests.support.viewer import make_settings, viewer

SENDERS = ("heavy@big.example", "one@small.example", "two@small.example")


def _record(gmail_id: str, sender: str, *, takeout: bool, unread: bool) -> MailRecord:
    return MailRecord(
        mail_id=f"gid:{gmail_id}" if takeout else gmail_id,
        rfc_message_id=f"{gmail_id}@{sender}",
        gmail_id=gmail_id if takeout else None,
        sender=sender,
        display_name="",
        date_unix=1_700_000_000,
        size_bytes=1000,
        labels="",
        unread=unread,
        list_unsubscribe=False,
    )


def _mailbox(db: Path, *, listed: bool = True, done: int | None = None) -> tuple[dict[str, int], int]:
    """60 threads of 1-3 messages; the heavy sender writes most. Returns exact counts and the thread count."""
    pairs: list[tuple[str, str | None]] = []
    records = []
    for t in range(60):
        for m in range(1 + t % 3):
            gmail_id = f"{t:03d}{m}"
            sender = SENDERS[0] if (t + m) % 3 else SENDERS[1 + m % 2]
            pairs.append((gmail_id, f"t{t:03d}"))
            records.append(_record(gmail_id, sender, takeout=t % 10 == 0, unread=m == 0))
    engine = writer_engine(db)
    migrate(engine)
    with engine.begin() as conn:
        run_id = create_run(conn, source=Source.GMAIL_API, pid=1, now=time.time() - 100)
        count_batch(conn, records, source=Source.GMAIL_API, run_id=run_id)
        start_sample(conn, run_id=run_id, seed=5, now=int(time.time() - 100))
        add_listed(conn, pairs)
        if listed:
            fix_order(conn, run_id=run_id, seed=5)
            mark_done(conn, run_id=run_id, slot=60 if done is None else done)
    close_writer_keeping_sidecars(engine, db)
    exact: dict[str, int] = {}
    for r in records:
        exact[r.sender] = exact.get(r.sender, 0) + 1
    return exact, 60


def _get(tmp_path: Path, *, running: bool = True, **params: Any) -> dict[str, Any]:
    """The answer while an ingester holds the database's lock (`running`), or after it died without a word."""
    with viewer(make_settings(tmp_path)) as client, IngestLock(tmp_path / "stats.db") if running else nullcontext():
        response = client.get("/api/estimates", params=params)
        assert response.status_code == 200
        body: dict[str, Any] = response.json()
        return body


def test_a_whole_sample_gives_the_exact_counts_with_no_width(tmp_path: Path) -> None:
    exact, _ = _mailbox(tmp_path / "stats.db")
    body = _get(tmp_path)
    assert (body["estimated"], body["phase"], body["sample"]["share_of_mailbox"]) == (True, "sampling", 1.0)
    got = {r["key"]: r["estimated_messages"] for r in body["rows"]}
    assert got == {k: {"estimate": v, "low_95": v, "high_95": v} for k, v in exact.items()}
    assert [r["estimated_rank"] for r in body["rows"]] == [1, 2, 3]
    domains = {r["key"]: r["estimated_messages"]["estimate"] for r in _get(tmp_path, by="domain")["rows"]}
    assert domains == {"big.example": exact[SENDERS[0]], "small.example": exact[SENDERS[1]] + exact[SENDERS[2]]}


def test_half_a_sample_estimates_the_whole_and_says_when_it_is_exact(tmp_path: Path) -> None:
    exact, _ = _mailbox(tmp_path / "stats.db", done=30)
    body = _get(tmp_path)
    assert body["phase"] == "sampling" and 0 < body["sample"]["share_of_mailbox"] < 1
    assert body["sample"]["threads_sampled"] == 30 and body["sample"]["exact_in_seconds"] > 0
    heavy = body["rows"][0]
    assert heavy["key"] == SENDERS[0]
    messages = heavy["estimated_messages"]
    assert messages["low_95"] <= exact[SENDERS[0]] <= messages["high_95"]
    assert 0 < heavy["estimated_share"]["estimate"] < 1 and 0 <= heavy["estimated_unread_share"]["estimate"] <= 1


def test_a_run_left_open_by_a_killed_ingester_is_a_stopped_sample(tmp_path: Path) -> None:
    _mailbox(tmp_path / "stats.db", done=30)
    body = _get(tmp_path, running=False)
    assert (body["estimated"], body["phase"], body["sample"]["run_state"]) == (True, "stopped", "running")
    assert body["sample"]["exact_in_seconds"] is None and body["rows"]


def test_while_listing_there_is_no_estimate_yet(tmp_path: Path) -> None:
    _mailbox(tmp_path / "stats.db", listed=False)
    body = _get(tmp_path)
    assert (body["estimated"], body["phase"], body["rows"]) == (True, "listing", [])


def test_without_a_sample_every_count_is_exact(tmp_path: Path) -> None:
    engine = writer_engine(tmp_path / "stats.db")
    migrate(engine)
    close_writer_keeping_sidecars(engine, tmp_path / "stats.db")
    assert _get(tmp_path) == {"estimated": False, "phase": "exact", "by": "sender", "sample": None, "rows": []}
    assert _get(tmp_path, by="domain")["by"] == "domain"
