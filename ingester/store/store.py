"""Writes counted messages: dedupe against `seen_mails` (all sources), then the batch's sender, month and domain sums.

The statements are Core expressions over `shared.schema.models`, compiled once; callers own the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy import Connection, bindparam

from ingester.mbox.legacy_keys import legacy_claims
from ingester.records import GMAIL_ID_KEY, MailRecord
from ingester.store.compiled import driver_sql
from ingester.store.rollups import add_batch, domain_for, month_of, stored_senders
from ingester.store.search_index import index_senders
from ingester.store.sender_rows import SenderDelta, domain_deltas, needs_full_upsert, upsert_sender
from shared.schema.models import Source, seen_mails

CHUNK_RECORDS = 20000
_UNSEEN = "\0unseen"  # a month-cache miss (a str, so the cache keeps one type; never a month)

_SEEN_COLUMNS = (
    "mail_id",
    "rfc_message_id",
    "gmail_id",
    "sender",
    "date_unix",
    "size_bytes",
    "labels",
    "unread",
    "list_unsubscribe",
    "source",
    "run_id",
    "counted",
)


@cache
def _insert_seen() -> str:
    return driver_sql(seen_mails.insert().values({c: bindparam(c) for c in _SEEN_COLUMNS}), _SEEN_COLUMNS)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    new: int
    duplicates: int


def _existing(conn: Connection, column: str, values: Iterable[str], *, counted_only: bool = False) -> set[str]:
    """Which of `values` already stand in `seen_mails.<column>` (a fixed column name of ours, never input).

    The values travel as one JSON array so the statement text never varies: an `IN (?, ?, ...)` list of varying
    length would fill the driver's statement cache with large prepared statements, growing memory per batch.
    """
    wanted = list(dict.fromkeys(values))
    if not wanted:
        return set()
    extra = " AND counted = 1" if counted_only else ""
    sql = f"SELECT {column} FROM seen_mails WHERE {column} IN (SELECT value FROM json_each(?)){extra}"
    return {row[0] for row in conn.exec_driver_sql(sql, (json.dumps(wanted),))}


def _imported_before_gid_keys(conn: Connection, records: Sequence[MailRecord]) -> set[str]:
    """`gid:` keys whose message an older import recorded under a header hash (same Gmail id, source mbox).

    Before Takeout messages without Message-ID were keyed by their Gmail id they were keyed by a hash of their
    headers; re-importing such a file must still add nothing.
    """
    wanted = {r.gmail_id: r.mail_id for r in records if r.gmail_id and r.mail_id.startswith(GMAIL_ID_KEY)}
    if not wanted:
        return set()
    sql = (
        "SELECT gmail_id FROM seen_mails WHERE gmail_id IN (SELECT value FROM json_each(?))"
        " AND source = ? AND mail_id LIKE 'hdr:%'"
    )
    rows = conn.exec_driver_sql(sql, (json.dumps(list(wanted)), str(Source.MBOX)))
    return {wanted[row[0]] for row in rows}


def count_batch(conn: Connection, records: Sequence[MailRecord], *, source: Source, run_id: int) -> BatchOutcome:
    """Records every message not seen before and adds the counted ones to `senders`.

    A message is counted when its `mail_id` is new and it is not already counted under another key: the same
    Message-ID from any source, or (Takeout) its Gmail id stored by an API scan, or (API) an imported message
    whose postmark carried this Gmail id. Known `mail_id`s are left untouched, so re-ingesting adds nothing.
    """
    if not records:
        return BatchOutcome(0, 0)
    if len(records) > CHUNK_RECORDS:  # bounded memory for the lookups below, however many records come at once
        outcomes = [
            count_batch(conn, records[i : i + CHUNK_RECORDS], source=source, run_id=run_id)
            for i in range(0, len(records), CHUNK_RECORDS)
        ]
        return BatchOutcome(sum(o.new for o in outcomes), sum(o.duplicates for o in outcomes))
    known_ids = _existing(conn, "mail_id", (r.mail_id for r in records))
    known_ids |= _imported_before_gid_keys(conn, records)
    claims = legacy_claims(conn, records, known_ids)  # recorded uncounted: an older import counted them
    counted_rfc = _existing(
        conn, "rfc_message_id", (r.rfc_message_id for r in records if r.rfc_message_id), counted_only=True
    )
    # The Gmail id links sources here: an API row's `mail_id` is the bare id, and an mbox row keeps the id its
    # postmark gave in `gmail_id`. Within the import it is the key itself (`gid:`) only when there is no Message-ID.
    gmail_ids = [r.gmail_id for r in records if r.gmail_id]
    counted_gmail: set[str] = set()
    if gmail_ids:
        other_source_column = "gmail_id" if source == Source.GMAIL_API else "mail_id"
        counted_gmail = _existing(conn, other_source_column, gmail_ids, counted_only=True)

    rows: list[tuple[object, ...]] = []
    deltas: dict[str, SenderDelta] = {}
    months: dict[tuple[str, str], list[int]] = {}
    month_of_day: dict[int, str | None] = {}  # per chunk: most of a chunk's messages share a few hundred days
    duplicates = 0
    # Per-record work is most of this function's CPU time at 100k messages a second: bound methods and constants
    # are hoisted, and booleans go to SQLite as they are (the driver binds a bool as the integer 0 or 1).
    seen_tail, uncounted_tail = (str(source), run_id, 1), (str(source), run_id, 0)
    append, add_known = rows.append, known_ids.add
    for record in records:
        mail_id, rfc_message_id, gmail_id, sender, _, date, size, labels, unread, lu, _, _, _ = record
        if mail_id in known_ids:
            duplicates += 1
            continue
        add_known(mail_id)
        if (
            (rfc_message_id is not None and rfc_message_id in counted_rfc)
            or (gmail_id is not None and gmail_id in counted_gmail)
            or (claims and mail_id in claims)
        ):
            duplicates += 1
            append((mail_id, rfc_message_id, gmail_id, sender, date, size, labels, unread, lu, *uncounted_tail))
            continue
        if rfc_message_id is not None:
            counted_rfc.add(rfc_message_id)
        delta = deltas.get(sender)
        if delta is None:
            delta = deltas[sender] = SenderDelta()
        delta.add(record)
        if date is not None:
            day = date // 86400
            month = month_of_day.get(day, _UNSEEN)
            if month is _UNSEEN:
                month = month_of_day[day] = month_of(date)
            if month is not None:
                tally = months.get((sender, month))
                if tally is None:
                    months[(sender, month)] = [1, size]
                else:
                    tally[0] += 1
                    tally[1] += size
        append((mail_id, rfc_message_id, gmail_id, sender, date, size, labels, unread, lu, *seen_tail))
    if rows:
        conn.exec_driver_sql(_insert_seen(), rows)
    if deltas:
        stored = stored_senders(conn, deltas)
        domain_of = {sender: domain_for(sender, stored) for sender in deltas}
        full: list[tuple[object, ...]] = []
        lean: list[tuple[object, ...]] = []
        for sender, d in deltas.items():
            (full if needs_full_upsert(d, stored.get(sender)) else lean).append(d.row(sender, domain_of[sender]))
        for rows_, is_lean in ((full, False), (lean, True)):
            if rows_:
                conn.exec_driver_sql(upsert_sender(lean=is_lean), rows_)
        renamed = {
            sender: stored[sender].display_name
            for sender, d in deltas.items()
            if sender in stored and d.display_name and d.display_name != stored[sender].display_name
        }
        index_senders(conn, new=[sender for sender in deltas if sender not in stored], renamed=renamed)
        add_batch(conn, by_domain=domain_deltas(deltas, stored, domain_of), by_sender_month=months, domain_of=domain_of)
    new = sum(d.mails_sent for d in deltas.values())
    return BatchOutcome(new=new, duplicates=duplicates)
