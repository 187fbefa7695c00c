"""SQL of the Gmail scan and the backfill beyond `store.count_batch`: what to fetch, what to retry, sync state.

Callers own the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from ingester.records import MailRecord

_KNOWN_BY_MAIL_ID = "SELECT mail_id FROM seen_mails WHERE mail_id IN (SELECT value FROM json_each(?))"
_KNOWN_BY_GMAIL_ID = "SELECT gmail_id FROM seen_mails WHERE gmail_id IN (SELECT value FROM json_each(?))"
HISTORY_ID_KEY = "gmail_history_id"
# The mailbox historyId when the current (maybe interrupted) scan first started; becomes HISTORY_ID_KEY at its end.
PENDING_HISTORY_ID_KEY = "gmail_history_id_pending"


def unknown_ids(conn: Connection, ids: Sequence[str]) -> list[str]:
    """The Gmail ids not yet recorded: neither a scanned `mail_id` nor a Takeout postmark's `gmail_id`.

    The ids travel as one JSON array so the statement text never varies (as in `store._existing`).
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    payload = (json.dumps(wanted),)
    known = {row[0] for row in conn.exec_driver_sql(_KNOWN_BY_MAIL_ID, payload)}
    known.update(row[0] for row in conn.exec_driver_sql(_KNOWN_BY_GMAIL_ID, payload))
    return [i for i in wanted if i not in known]


def unsettled_ids(conn: Connection, ids: Sequence[str], *, run_id: int) -> list[str]:
    """`unknown_ids` less those this run already fetched without keeping a row (see `settle`)."""
    todo = unknown_ids(conn, ids)
    if not todo:
        return []
    sql = "SELECT gmail_id FROM scan_settled WHERE run_id = ? AND gmail_id IN (SELECT value FROM json_each(?))"
    done = {row[0] for row in conn.exec_driver_sql(sql, (run_id, json.dumps(todo)))}
    return [i for i in todo if i not in done]


def settle(conn: Connection, outcomes: Mapping[str, str], *, run_id: int) -> None:
    """Remembers ids this run fetched but keeps no row for: 'excluded', 'gone' or 'failed'."""
    if outcomes:
        conn.exec_driver_sql(
            "INSERT OR REPLACE INTO scan_settled (gmail_id, run_id, outcome) VALUES (?, ?, ?)",
            [(gmail_id, run_id, outcome) for gmail_id, outcome in outcomes.items()],
        )


def forget_settled(conn: Connection, *, run_id: int | None = None) -> None:
    """Drops the settled ids of run `run_id` (at its end), or of every run that can no longer be resumed."""
    if run_id is not None:
        conn.exec_driver_sql("DELETE FROM scan_settled WHERE run_id = ?", (run_id,))
        return
    conn.exec_driver_sql(
        "DELETE FROM scan_settled WHERE run_id NOT IN (SELECT run_id FROM ingest_runs WHERE state != 'done')"
    )


def get_sync_state(conn: Connection, key: str) -> str | None:
    row = conn.exec_driver_sql("SELECT value FROM sync_state WHERE key = ?", (key,)).first()
    return str(row[0]) if row is not None else None


def set_sync_state(conn: Connection, key: str, value: str) -> None:
    conn.exec_driver_sql(
        "INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def delete_sync_state(conn: Connection, key: str) -> None:
    conn.exec_driver_sql("DELETE FROM sync_state WHERE key = ?", (key,))


def pending_retries(conn: Connection) -> list[str]:
    return [str(row[0]) for row in conn.exec_driver_sql("SELECT gmail_id FROM gmail_retry ORDER BY gmail_id")]


def record_retries(conn: Connection, failures: Mapping[str, str], *, run_id: int) -> None:
    if failures:
        conn.exec_driver_sql(
            "INSERT INTO gmail_retry (gmail_id, run_id, reason) VALUES (?, ?, ?)"
            " ON CONFLICT (gmail_id) DO UPDATE SET run_id = excluded.run_id, reason = excluded.reason",
            [(gmail_id, run_id, reason[:500]) for gmail_id, reason in failures.items()],
        )


def clear_retries(conn: Connection, ids: Iterable[str]) -> None:
    rows = [(gmail_id,) for gmail_id in ids]
    if rows:
        conn.exec_driver_sql("DELETE FROM gmail_retry WHERE gmail_id = ?", rows)


@dataclass(frozen=True, slots=True)
class BackfillRow:
    row_id: int
    mail_id: str
    gmail_id: str


def backfill_candidates(conn: Connection, *, after_row: int, limit: int) -> list[BackfillRow]:
    """Scan rows still lacking a Message-ID that the backfill has not settled, by row id after `after_row`."""
    sql = (
        "SELECT s.id, s.mail_id, coalesce(s.gmail_id, s.mail_id) FROM seen_mails s"
        " LEFT JOIN backfill_checked b ON b.mail_id = s.mail_id"
        " WHERE s.source = 'gmail_api' AND s.rfc_message_id IS NULL AND b.mail_id IS NULL AND s.id > ?"
        " ORDER BY s.id LIMIT ?"
    )
    return [BackfillRow(int(a), str(b), str(c)) for a, b, c in conn.exec_driver_sql(sql, (after_row, limit))]


def fill_scan_row(conn: Connection, record: MailRecord) -> None:
    """Stores a backfilled Message-ID; a Rust-era row (no sender yet) also gets its metadata."""
    conn.exec_driver_sql(
        "UPDATE seen_mails SET rfc_message_id = ?,"
        " date_unix = CASE WHEN sender = '' THEN ? ELSE date_unix END,"
        " size_bytes = CASE WHEN sender = '' THEN ? ELSE size_bytes END,"
        " labels = CASE WHEN sender = '' THEN ? ELSE labels END,"
        " unread = CASE WHEN sender = '' THEN ? ELSE unread END,"
        " list_unsubscribe = CASE WHEN sender = '' THEN ? ELSE list_unsubscribe END,"
        " sender = CASE WHEN sender = '' THEN ? ELSE sender END"
        " WHERE mail_id = ?",
        (
            record.rfc_message_id,
            record.date_unix,
            record.size_bytes,
            record.labels,
            int(record.unread),
            int(record.list_unsubscribe),
            record.sender,
            record.mail_id,
        ),
    )


def collapse_double_counts(conn: Connection, *, keep_mail_id: str, rfc_message_id: str) -> int:
    """Leaves `keep_mail_id` the only counted row of its Message-ID: every other counted one is uncounted and
    taken off its sender's totals. Returns how many were uncounted (0 when run again: idempotent)."""
    kept = conn.exec_driver_sql("SELECT counted FROM seen_mails WHERE mail_id = ?", (keep_mail_id,)).first()
    if kept is None or not kept[0]:
        return 0
    others = conn.exec_driver_sql(
        "SELECT id, sender, size_bytes, unread, list_unsubscribe FROM seen_mails"
        " WHERE rfc_message_id = ? AND counted = 1 AND mail_id != ?",
        (rfc_message_id, keep_mail_id),
    ).all()
    for row_id, sender, size, unread, unsubscribe in others:
        conn.exec_driver_sql("UPDATE seen_mails SET counted = 0 WHERE id = ?", (row_id,))
        conn.exec_driver_sql(
            "UPDATE senders SET mails_sent = max(mails_sent - 1, 0), bytes = max(bytes - ?, 0),"
            " unread = max(unread - ?, 0), list_unsubscribe = max(list_unsubscribe - ?, 0) WHERE sender = ?",
            (size, unread, unsubscribe, sender),
        )
    conn.exec_driver_sql("DELETE FROM senders WHERE mails_sent <= 0")
    return len(others)


def count_backfill_candidates(conn: Connection) -> int:
    sql = (
        "SELECT count(*) FROM seen_mails s LEFT JOIN backfill_checked b ON b.mail_id = s.mail_id"
        " WHERE s.source = 'gmail_api' AND s.rfc_message_id IS NULL AND b.mail_id IS NULL"
    )
    return int(conn.exec_driver_sql(sql).scalar_one())


def mark_backfilled(conn: Connection, statuses: Mapping[str, str]) -> None:
    if statuses:
        conn.exec_driver_sql(
            "INSERT OR REPLACE INTO backfill_checked (mail_id, status) VALUES (?, ?)", list(statuses.items())
        )
