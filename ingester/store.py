"""Writes counted messages: dedupe against `seen_mails` (all sources) and incremental `senders` upserts.

All SQL the ingesters run on `seen_mails`/`senders` lives here. Callers own the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from ingester.records import GMAIL_ID_KEY, MailRecord
from shared.models import Source

CHUNK_RECORDS = 5000

_INSERT_SEEN = (
    "INSERT INTO seen_mails (mail_id, rfc_message_id, gmail_id, sender, date_unix, size_bytes, labels, unread,"
    " list_unsubscribe, source, run_id, counted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# SQLite evaluates every SET expression against the row as it was, so the CASEs below see the old name/time.
_UPSERT_SENDER = """
INSERT INTO senders (sender, display_name, display_name_unix, mails_sent, first_seen_unix, last_seen_unix,
                     bytes, unread, list_unsubscribe)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (sender) DO UPDATE SET
    mails_sent = mails_sent + excluded.mails_sent,
    first_seen_unix = min(coalesce(first_seen_unix, excluded.first_seen_unix),
                          coalesce(excluded.first_seen_unix, first_seen_unix)),
    last_seen_unix = max(coalesce(last_seen_unix, excluded.last_seen_unix),
                         coalesce(excluded.last_seen_unix, last_seen_unix)),
    bytes = bytes + excluded.bytes,
    unread = unread + excluded.unread,
    list_unsubscribe = list_unsubscribe + excluded.list_unsubscribe,
    display_name = CASE
        WHEN excluded.display_name != '' AND (display_name = ''
             OR coalesce(excluded.display_name_unix, -1) >= coalesce(display_name_unix, -1))
        THEN excluded.display_name ELSE display_name END,
    display_name_unix = CASE
        WHEN excluded.display_name != '' AND (display_name = ''
             OR coalesce(excluded.display_name_unix, -1) >= coalesce(display_name_unix, -1))
        THEN excluded.display_name_unix ELSE display_name_unix END
"""


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    new: int
    duplicates: int


@dataclass(slots=True)
class _SenderDelta:
    display_name: str
    display_name_unix: int | None
    mails_sent: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    bytes: int
    unread: int
    list_unsubscribe: int

    def add(self, record: MailRecord) -> None:
        date = record.date_unix
        self.mails_sent += 1
        self.bytes += record.size_bytes
        self.unread += record.unread
        self.list_unsubscribe += record.list_unsubscribe
        if date is not None:
            self.first_seen_unix = date if self.first_seen_unix is None else min(self.first_seen_unix, date)
            self.last_seen_unix = date if self.last_seen_unix is None else max(self.last_seen_unix, date)
        if record.display_name and (
            not self.display_name or (date if date is not None else -1) >= (self.display_name_unix or -1)
        ):
            self.display_name = record.display_name
            self.display_name_unix = date


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

    rows = []
    deltas: dict[str, _SenderDelta] = {}
    duplicates = 0
    for record in records:
        if record.mail_id in known_ids:
            duplicates += 1
            continue
        known_ids.add(record.mail_id)
        counted = not (
            (record.rfc_message_id is not None and record.rfc_message_id in counted_rfc)
            or (record.gmail_id is not None and record.gmail_id in counted_gmail)
        )
        if counted:
            if record.rfc_message_id is not None:
                counted_rfc.add(record.rfc_message_id)
            delta = deltas.get(record.sender)
            if delta is None:
                delta = deltas[record.sender] = _SenderDelta("", None, 0, None, None, 0, 0, 0)
            delta.add(record)
        else:
            duplicates += 1
        rows.append(
            (
                record.mail_id,
                record.rfc_message_id,
                record.gmail_id,
                record.sender,
                record.date_unix,
                record.size_bytes,
                record.labels,
                int(record.unread),
                int(record.list_unsubscribe),
                str(source),
                run_id,
                int(counted),
            )
        )
    if rows:
        conn.exec_driver_sql(_INSERT_SEEN, rows)
    if deltas:
        conn.exec_driver_sql(
            _UPSERT_SENDER,
            [
                (
                    sender,
                    d.display_name,
                    d.display_name_unix,
                    d.mails_sent,
                    d.first_seen_unix,
                    d.last_seen_unix,
                    d.bytes,
                    d.unread,
                    d.list_unsubscribe,
                )
                for sender, d in deltas.items()
            ],
        )
    new = sum(d.mails_sent for d in deltas.values())
    return BatchOutcome(new=new, duplicates=duplicates)
