"""The per-sender summary document: `gmail-stats export` writes it and the viewer serves it at `/api/summary`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, select

from shared.schema.models import senders

SENDER_COLUMNS = (
    "sender",
    "display_name",
    "mails_sent",
    "first_seen_unix",
    "last_seen_unix",
    "bytes",
    "unread",
    "list_unsubscribe",
)


@dataclass(frozen=True, slots=True)
class SenderRow:
    sender: str
    display_name: str
    mails_sent: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    bytes: int
    unread: int
    list_unsubscribe: int


@dataclass(frozen=True, slots=True)
class SenderChoice:
    """`gmail-stats export`'s date and size filters: the viewer's `last_before` … `min_avg_bytes` terms
    (`viewer.query.filters.SenderFilter`, which the ingester may not import), in UTC unix seconds and bytes."""

    last_before: int | None = None
    last_after: int | None = None
    first_before: int | None = None
    first_after: int | None = None
    min_bytes: int = 0
    min_avg_bytes: int = 0


def all_senders(conn: Connection, choice: SenderChoice | None = None) -> list[SenderRow]:
    """Every sender (or those `choice` keeps), most mail first, ties by sender key."""
    t = senders
    stmt = select(*(t.c[name] for name in SENDER_COLUMNS)).order_by(t.c.mails_sent.desc(), t.c.sender.asc())
    if choice is not None:
        stmt = stmt.where(*_chosen(choice))
    return [SenderRow(*row) for row in conn.execute(stmt)]


def _chosen(c: SenderChoice) -> list[ColumnElement[bool]]:
    """The same terms as the viewer's SQL (`viewer.query.sender_queries`): before is strictly before, after is on
    or after; a sender with no dated mail has no first or last date."""
    t = senders.c
    terms: list[ColumnElement[bool]] = []
    if c.last_before is not None:
        terms.append(t.last_seen_unix < c.last_before)
    if c.last_after is not None:
        terms.append(t.last_seen_unix >= c.last_after)
    if c.first_before is not None:
        terms.append(t.first_seen_unix < c.first_before)
    if c.first_after is not None:
        terms.append(t.first_seen_unix >= c.first_after)
    if c.min_bytes > 0:
        terms.append(t.bytes >= c.min_bytes)
    if c.min_avg_bytes > 0:
        terms.append(and_(t.mails_sent > 0, t.bytes >= t.mails_sent * c.min_avg_bytes))
    return terms


def summary_document(senders: list[SenderRow], *, now: float) -> dict[str, Any]:
    return {
        "total_messages": sum(s.mails_sent for s in senders),
        "senders": [asdict(s) for s in senders],
        "generated_at_unix": int(now),
    }
