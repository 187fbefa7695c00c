"""SQL of the Gmail scan and the backfill beyond `store.count_batch`: what to fetch, what to retry, sync state.

Callers own the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy import (
    ColumnElement,
    Connection,
    Join,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.sqlite import insert

from ingester.records import MailRecord
from ingester.store.compiled import driver_sql
from ingester.store.rollups import month_of, remove_message
from ingester.store.search_index import unindex_sender
from shared.schema.models import Source, backfill_checked, gmail_retry, seen_mails, senders, sync_state

HISTORY_ID_KEY = "gmail_history_id"
# The mailbox historyId when the current (maybe interrupted) scan first started; becomes HISTORY_ID_KEY at its end.
PENDING_HISTORY_ID_KEY = "gmail_history_id_pending"
_M = seen_mails.c


def unknown_ids(conn: Connection, ids: Sequence[str]) -> list[str]:
    """The Gmail ids not yet recorded: neither a scanned `mail_id` nor a Takeout postmark's `gmail_id`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    payload = json.dumps(wanted)
    known: set[str] = set()
    for column in ("mail_id", "gmail_id"):
        each = func.json_each(payload).table_valued("value")
        stmt = select(_M[column]).where(_M[column].in_(select(each.c.value)))
        known.update(row[0] for row in conn.execute(stmt))
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
    row = conn.execute(select(sync_state.c.value).where(sync_state.c.key == key)).first()
    return str(row[0]) if row is not None else None


def set_sync_state(conn: Connection, key: str, value: str) -> None:
    stmt = insert(sync_state).values(key=key, value=value)
    conn.execute(stmt.on_conflict_do_update(index_elements=[sync_state.c.key], set_={"value": stmt.excluded.value}))


def delete_sync_state(conn: Connection, key: str) -> None:
    conn.execute(delete(sync_state).where(sync_state.c.key == key))


def pending_retries(conn: Connection) -> list[str]:
    return [str(row[0]) for row in conn.execute(select(gmail_retry.c.gmail_id).order_by(gmail_retry.c.gmail_id))]


def record_retries(conn: Connection, failures: Mapping[str, str], *, run_id: int) -> None:
    if failures:
        stmt = insert(gmail_retry)
        stmt = stmt.on_conflict_do_update(
            index_elements=[gmail_retry.c.gmail_id],
            set_={"run_id": stmt.excluded.run_id, "reason": stmt.excluded.reason},
        )
        rows = [{"gmail_id": g, "run_id": run_id, "reason": reason[:500]} for g, reason in failures.items()]
        conn.execute(stmt, rows)


def clear_retries(conn: Connection, ids: Iterable[str]) -> None:
    rows = [{"id": gmail_id} for gmail_id in ids]
    if rows:
        conn.execute(delete(gmail_retry).where(gmail_retry.c.gmail_id == bindparam("id")), rows)


@dataclass(frozen=True, slots=True)
class BackfillRow:
    row_id: int
    mail_id: str
    gmail_id: str


def _unsettled() -> tuple[Join, ColumnElement[bool]]:
    b = backfill_checked.c
    return (
        seen_mails.outerjoin(backfill_checked, b.mail_id == _M.mail_id),
        and_(_M.source == str(Source.GMAIL_API), _M.rfc_message_id.is_(None), b.mail_id.is_(None)),
    )


def backfill_candidates(conn: Connection, *, after_row: int, limit: int) -> list[BackfillRow]:
    """Scan rows still lacking a Message-ID that the backfill has not settled, by row id after `after_row`."""
    joined, where = _unsettled()
    stmt = (
        select(_M.id, _M.mail_id, func.coalesce(_M.gmail_id, _M.mail_id))
        .select_from(joined)
        .where(where, _M.id > after_row)
        .order_by(_M.id)
        .limit(limit)
    )
    return [BackfillRow(int(a), str(b), str(c)) for a, b, c in conn.execute(stmt)]


_FILLED = ("date_unix", "size_bytes", "labels", "unread", "list_unsubscribe", "sender")


@cache
def _fill_scan_row() -> str:
    legacy = _M.sender == literal_column("''")
    stmt = (
        update(seen_mails)
        .where(_M.mail_id == bindparam("key"))
        .values(
            rfc_message_id=bindparam("rfc"),
            **{name: case((legacy, bindparam(name)), else_=_M[name]) for name in _FILLED},
        )
    )
    # The SET clause follows the table's column order, so `sender` comes first.
    return driver_sql(stmt, ("rfc", "sender", *_FILLED[:-1], "key"))


def fill_scan_row(conn: Connection, record: MailRecord) -> None:
    """Stores a backfilled Message-ID; a Rust-era row (no sender yet) also gets its metadata."""
    values = (record.date_unix, record.size_bytes, record.labels, int(record.unread), int(record.list_unsubscribe))
    conn.exec_driver_sql(_fill_scan_row(), (record.rfc_message_id, record.sender, *values, record.mail_id))


@cache
def _collapse_statements() -> tuple[str, ...]:
    s = senders.c
    zero: ColumnElement[int] = literal_column("0")
    one: ColumnElement[int] = literal_column("1")
    kept = select(_M.counted).where(_M.mail_id == bindparam("key"))
    others = select(_M.id, _M.sender, _M.size_bytes, _M.unread, _M.list_unsubscribe, _M.date_unix, _M.run_id).where(
        _M.rfc_message_id == bindparam("rfc"), _M.counted == one, _M.mail_id != bindparam("key")
    )
    take_sender = (
        update(senders)
        .where(s.sender == bindparam("key"))
        .values(
            mails_sent=func.max(s.mails_sent - one, zero),
            bytes=func.max(s.bytes - bindparam("size"), zero),
            unread=func.max(s.unread - bindparam("unread"), zero),
            list_unsubscribe=func.max(s.list_unsubscribe - bindparam("lu"), zero),
        )
        .returning(s.mails_sent, s.domain, s.id, s.display_name)
    )
    return (
        driver_sql(kept, ("key",)),
        driver_sql(others, ("rfc", "key")),
        driver_sql(update(seen_mails).where(_M.id == bindparam("row")).values(counted=zero), ("row",)),
        driver_sql(take_sender, ("size", "unread", "lu", "key")),
        driver_sql(delete(senders).where(s.sender == bindparam("key")), ("key",)),
    )


def collapse_double_counts(conn: Connection, *, keep_mail_id: str, rfc_message_id: str) -> int:
    """Leaves `keep_mail_id` the only counted row of its Message-ID: every other counted one is uncounted and
    taken off its sender's totals and the rollups. Returns how many were uncounted (0 when run again)."""
    find_kept, find_others, uncount, take_sender, drop_sender = _collapse_statements()
    kept = conn.exec_driver_sql(find_kept, (keep_mail_id,)).first()
    if kept is None or not kept[0]:
        return 0
    others = conn.exec_driver_sql(find_others, (rfc_message_id, keep_mail_id)).all()
    for row_id, sender, size, unread, unsubscribe, date_unix, run_id in others:
        conn.exec_driver_sql(uncount, (row_id,))
        left = conn.exec_driver_sql(take_sender, (size, unread, unsubscribe, sender)).first()
        if left is None:
            continue  # no sender row (never counted under it): nothing to take off
        gone = int(left[0]) <= 0
        if gone:
            conn.exec_driver_sql(drop_sender, (sender,))
            unindex_sender(conn, row_id=int(left[2]), sender=sender, display_name=str(left[3]))
        remove_message(
            conn,
            sender=sender,
            domain=str(left[1]),
            # Rows of Rust-era databases (no run) were never given a month.
            month=month_of(date_unix) if run_id is not None else None,
            size=size,
            unread=unread,
            list_unsubscribe=unsubscribe,
            sender_gone=gone,
        )
    return len(others)


def count_backfill_candidates(conn: Connection) -> int:
    joined, where = _unsettled()
    return int(conn.execute(select(func.count()).select_from(joined).where(where)).scalar_one())


@cache
def _mark_backfilled() -> str:
    columns = ("mail_id", "status")
    return driver_sql(
        insert(backfill_checked).prefix_with("OR REPLACE").values({c: bindparam(c) for c in columns}), columns
    )


def mark_backfilled(conn: Connection, statuses: Mapping[str, str]) -> None:
    if statuses:
        conn.exec_driver_sql(_mark_backfilled(), list(statuses.items()))
