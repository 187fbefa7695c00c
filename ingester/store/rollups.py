"""The per-month and per-domain rollups, written with the counts they sum, in the caller's transaction.

Aggregated per batch in memory and written once per domain and month: a trigger per sender row cost several
times the import's own writes. `shared.schema.migration_rollups` builds the same sums for existing databases.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from sqlalchemy import ColumnElement, Connection, Table, bindparam, func, literal_column, select, update
from sqlalchemy.dialects.sqlite import insert

from ingester.store.compiled import driver_sql
from shared.schema.models import domain_months, domains, months, sender_months, senders
from shared.text.domains import registrable_domain

ZERO: ColumnElement[int] = literal_column("0")
ONE: ColumnElement[int] = literal_column("1")


def month_of(date_unix: int | None) -> str | None:
    """The UTC calendar month ("YYYY-MM") of a date, or None for undated (or unrepresentable) dates."""
    if date_unix is None:
        return None
    return _month_of_day(date_unix // 86400)


@lru_cache(maxsize=4096)
def _month_of_day(day: int) -> str | None:
    date_unix = day * 86400
    try:
        moment = time.gmtime(date_unix)
    except (OverflowError, OSError, ValueError):
        return None
    return f"{moment.tm_year:04d}-{moment.tm_mon:02d}" if 1 <= moment.tm_year <= 9999 else None


@dataclass(slots=True)
class DomainDelta:
    senders: int = 0
    mails_sent: int = 0
    bytes: int = 0
    unread: int = 0
    list_unsubscribe: int = 0
    first_seen_unix: int | None = None
    last_seen_unix: int | None = None


def _adding(table: Table, keys: tuple[str, ...], sums: tuple[str, ...], extra: Mapping[str, object] = {}) -> str:
    columns = (*keys, *sums, *extra)
    stmt = insert(table).values({c: bindparam(c) for c in columns})
    update_ = {c: table.c[c] + stmt.excluded[c] for c in sums}
    update_.update({c: make(table.c[c], stmt.excluded[c]) for c, make in extra.items()})  # type: ignore[operator]
    return driver_sql(stmt.on_conflict_do_update(index_elements=[table.c[k] for k in keys], set_=update_), columns)


def keep_min(old: ColumnElement[int], new: ColumnElement[int]) -> ColumnElement[int]:
    return func.min(func.coalesce(old, new), func.coalesce(new, old))


def keep_max(old: ColumnElement[int], new: ColumnElement[int]) -> ColumnElement[int]:
    return func.max(func.coalesce(old, new), func.coalesce(new, old))


@cache
def _statements() -> tuple[str, str, str, str]:
    counts = ("messages", "bytes")
    domain_sums = ("senders", "mails_sent", "bytes", "unread", "list_unsubscribe")
    seen = {"first_seen_unix": keep_min, "last_seen_unix": keep_max}
    return (
        _adding(sender_months, ("sender", "month"), counts),
        _adding(months, ("month",), counts),
        _adding(domain_months, ("domain", "month"), counts),
        _adding(domains, ("domain",), domain_sums, seen),
    )


@cache
def _stored_domains_sql() -> str:
    each = func.json_each(bindparam("keys")).table_valued("value")
    s = senders.c
    stmt = select(s.sender, s.domain, s.display_name, s.first_seen_unix).where(s.sender.in_(select(each.c.value)))
    return driver_sql(stmt, ("keys",))


@dataclass(frozen=True, slots=True)
class StoredSender:
    domain: str
    display_name: str
    first_seen_unix: int | None


def stored_senders(conn: Connection, keys: Iterable[str]) -> dict[str, StoredSender]:
    """What a batch needs to know of each sender in `keys` that already has a row (one statement per batch)."""
    wanted = list(keys)
    if not wanted:
        return {}
    rows = conn.exec_driver_sql(_stored_domains_sql(), (json.dumps(wanted),))
    return {str(s): StoredSender(str(d), str(n), f) for s, d, n, f in rows}


def domain_for(sender: str, stored: Mapping[str, StoredSender]) -> str:
    found = stored.get(sender)
    return found.domain if found is not None else registrable_domain(sender)


def add_batch(
    conn: Connection,
    *,
    by_domain: Mapping[str, DomainDelta],
    by_sender_month: Mapping[tuple[str, str], list[int]],
    domain_of: Mapping[str, str],
) -> None:
    """Adds one batch's sums: `by_sender_month` is (sender, month) → [messages, bytes]."""
    per_sender, per_month, per_domain = _statements()[:3]
    add_domain = _statements()[3]
    if by_domain:
        conn.exec_driver_sql(
            add_domain,
            [
                (d, x.senders, x.mails_sent, x.bytes, x.unread, x.list_unsubscribe, x.first_seen_unix, x.last_seen_unix)
                for d, x in by_domain.items()
            ],
        )
    if not by_sender_month:
        return
    conn.exec_driver_sql(per_sender, [(s, m, n, b) for (s, m), (n, b) in by_sender_month.items()])
    month_sums: dict[str, list[int]] = {}
    domain_month_sums: dict[tuple[str, str], list[int]] = {}
    for (sender, month), (n, b) in by_sender_month.items():
        sums = month_sums.setdefault(month, [0, 0])
        sums[0] += n
        sums[1] += b
        sums = domain_month_sums.setdefault((domain_of[sender], month), [0, 0])
        sums[0] += n
        sums[1] += b
    conn.exec_driver_sql(per_month, [(m, n, b) for m, (n, b) in month_sums.items()])
    conn.exec_driver_sql(per_domain, [(d, m, n, b) for (d, m), (n, b) in domain_month_sums.items()])


@cache
def _removal_statements() -> tuple[str, ...]:
    size: ColumnElement[int] = bindparam("size")
    dm, m, sm, d = domain_months.c, months.c, sender_months.c, domains.c
    return (
        driver_sql(
            update(sender_months)
            .where(sm.sender == bindparam("key"), sm.month == bindparam("month"))
            .values(messages=sm.messages - ONE, bytes=sm.bytes - size),
            ("size", "key", "month"),
        ),
        driver_sql(
            update(months).where(m.month == bindparam("month")).values(messages=m.messages - ONE, bytes=m.bytes - size),
            ("size", "month"),
        ),
        driver_sql(
            update(domain_months)
            .where(dm.domain == bindparam("domain"), dm.month == bindparam("month"))
            .values(messages=dm.messages - ONE, bytes=dm.bytes - size),
            ("size", "domain", "month"),
        ),
        driver_sql(
            update(domains)
            .where(d.domain == bindparam("domain"))
            .values(
                mails_sent=d.mails_sent - ONE,
                bytes=d.bytes - size,
                unread=d.unread - bindparam("unread"),
                list_unsubscribe=d.list_unsubscribe - bindparam("lu"),
                senders=d.senders - bindparam("gone"),
            ),
            ("gone", "size", "unread", "lu", "domain"),  # the SET clause follows the table's column order
        ),
    )


def remove_message(
    conn: Connection,
    *,
    sender: str,
    domain: str,
    month: str | None,
    size: int,
    unread: int,
    list_unsubscribe: int,
    sender_gone: bool,
) -> None:
    """Takes one uncounted message off the rollups (the double-count repair); `sender_gone` when its row went."""
    per_sender, per_month, per_domain_month, per_domain = _removal_statements()
    if month is not None:
        conn.exec_driver_sql(per_sender, (size, sender, month))
        conn.exec_driver_sql(per_month, (size, month))
        conn.exec_driver_sql(per_domain_month, (size, domain, month))
    conn.exec_driver_sql(per_domain, (int(sender_gone), size, unread, list_unsubscribe, domain))
    if sender_gone:
        conn.execute(domains.delete().where(domains.c.domain == domain, domains.c.senders <= ZERO))
