"""Every SQL statement the viewer runs, as named functions over a read-only `Connection` returning dataclasses.

Routes never build SQL. Nothing here writes, and nothing here runs DDL.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, literal, or_, select, true
from sqlalchemy.sql.elements import UnaryExpression

from shared.migrations import LATEST_VERSION, schema_version
from shared.models import Source, ingest_runs, seen_mails, senders
from shared.summary import SENDER_COLUMNS, SenderRow

_SENDERS = senders
_SEEN = seen_mails
_RUNS = ingest_runs
_EXPORT_CHUNK = 2000


class DbState(StrEnum):
    MISSING = "missing"  # no file yet: onboarding
    EMPTY = "empty"  # a file, but no senders yet (or no tables): onboarding
    OUTDATED = "outdated"  # an older schema (e.g. the Rust tool's): the next ingester run upgrades it
    TOO_NEW = "too_new"  # written by a newer gmail-stats: refuse to read it
    READY = "ready"


class SortKey(StrEnum):
    MAILS_SENT = "mails_sent"
    SENDER = "sender"
    LAST_SEEN = "last_seen"
    BYTES = "bytes"


class SortOrder(StrEnum):
    DESC = "desc"
    ASC = "asc"


@dataclass(frozen=True, slots=True)
class Totals:
    senders: int
    messages: int
    top_sender: SenderRow | None


@dataclass(frozen=True, slots=True)
class SendersPage:
    total: int  # senders matching the search
    senders: list[SenderRow]


@dataclass(frozen=True, slots=True)
class SourceMix:
    """Scan rows without a Message-ID can double-count mail that an import also counted, until a backfill."""

    mixed_sources: bool
    unrepaired_count: int


def schema_state(conn: Connection) -> tuple[DbState, int]:
    version = schema_version(conn)
    if version > LATEST_VERSION:
        return DbState.TOO_NEW, version
    if version < LATEST_VERSION:
        has_tables = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('senders', 'ingest_runs')"
        ).scalar_one()
        return (DbState.OUTDATED if has_tables else DbState.EMPTY), version
    return DbState.READY, version


def _row(values: Any) -> SenderRow:
    return SenderRow(*values)


def totals(conn: Connection) -> Totals:
    count, messages = conn.execute(select(func.count(), func.coalesce(func.sum(_SENDERS.c.mails_sent), 0))).one()
    top = conn.execute(_select_senders().order_by(*_order(SortKey.MAILS_SENT, SortOrder.DESC)).limit(1)).first()
    return Totals(senders=int(count), messages=int(messages), top_sender=_row(top) if top is not None else None)


def _select_senders() -> Any:
    return select(*(_SENDERS.c[name] for name in SENDER_COLUMNS))


def _order(sort: SortKey, order: SortOrder) -> list[UnaryExpression[Any]]:
    s = _SENDERS.c
    if sort is SortKey.SENDER:
        return [s.sender.desc() if order is SortOrder.DESC else s.sender.asc()]
    column = {SortKey.MAILS_SENT: s.mails_sent, SortKey.LAST_SEEN: s.last_seen_unix, SortKey.BYTES: s.bytes}[sort]
    # Ascending is the exact reverse of descending, so `ix_senders_mails_sent (mails_sent DESC, sender)` serves both.
    if order is SortOrder.DESC:
        return [column.desc().nulls_last(), s.sender.asc()]
    return [column.asc().nulls_first(), s.sender.desc()]


def _search(q: str) -> ColumnElement[bool]:
    if not q:
        return true()
    pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    s = _SENDERS.c
    return or_(s.sender.like(pattern, escape="\\"), s.display_name.like(pattern, escape="\\"))


def senders_page(
    conn: Connection, *, q: str, sort: SortKey, order: SortOrder, offset: int, limit: int, total: int | None
) -> SendersPage:
    """One page of senders; `total` is the known unfiltered count (skips a COUNT when there is no search)."""
    where = _search(q)
    if total is None or q:
        total = int(conn.execute(select(func.count()).select_from(_SENDERS).where(where)).scalar_one())
    stmt = _select_senders().where(where).order_by(*_order(sort, order)).limit(limit).offset(offset)
    return SendersPage(total=total, senders=[_row(r) for r in conn.execute(stmt)])


def iter_all_senders(conn: Connection) -> Iterator[SenderRow]:
    """Every sender, most mail first, fetched in chunks so a 200k-sender export streams in flat memory."""
    result = conn.execution_options(yield_per=_EXPORT_CHUNK).execute(
        _select_senders().order_by(*_order(SortKey.MAILS_SENT, SortOrder.DESC))
    )
    for partition in result.partitions():
        yield from (_row(r) for r in partition)


def source_mix(conn: Connection) -> SourceMix:
    """Counts scan rows lacking a Message-ID (served by the `rfc_message_id` index), and whether mbox data exists."""
    unrepaired = int(
        conn.execute(
            select(func.count())
            .select_from(_SEEN)
            .where(and_(_SEEN.c.rfc_message_id.is_(None), _SEEN.c.source == str(Source.GMAIL_API)))
        ).scalar_one()
    )
    if unrepaired == 0:
        return SourceMix(mixed_sources=False, unrepaired_count=0)
    imported = conn.execute(
        select(literal(1)).select_from(_RUNS).where(_RUNS.c.source == str(Source.MBOX)).limit(1)
    ).first()
    return SourceMix(mixed_sources=imported is not None, unrepaired_count=unrepaired)


def runs_fingerprint(conn: Connection) -> tuple[int, int, int, int]:
    """Changes whenever an ingester counts something (not on mere heartbeats): the key for totals and the mix."""
    row = conn.execute(
        select(
            func.count(),
            func.coalesce(func.sum(_RUNS.c.messages_new), 0),
            func.coalesce(func.sum(_RUNS.c.messages_seen), 0),
            func.coalesce(func.sum(_RUNS.c.messages_excluded + _RUNS.c.messages_skipped), 0),
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])
