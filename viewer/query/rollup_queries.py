"""Per-domain rows, read from the rollup the ingesters keep (`domains`); the monthly series is `volume_queries`.

Hidden senders are subtracted exactly: their own rows are few, so the page stays an index walk plus a merge.
Read-only; returns dataclasses.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, literal_column, not_, select, true

from shared.schema.models import domains
from shared.sender_list import gmail_search_url
from viewer.query.hidden_queries import HiddenByDomain, Seen, SeenLookup
from viewer.query.queries import Totals
from viewer.query.sender_queries import SortOrder
from viewer.query.sql_lists import in_values

_D = domains.c
# SQLite's largest integer: `offset + limit` of a page far past the end must still bind (the API allows any int64).
_SQLITE_MAX_INT = 2**63 - 1
_RATIO: ColumnElement[float] = literal_column("(CAST(domains.unread AS REAL) / max(domains.mails_sent, 1))")


class DomainSort(StrEnum):
    MAILS_SENT = "mails_sent"
    DOMAIN = "domain"
    SENDERS = "senders"
    BYTES = "bytes"
    LAST_SEEN = "last_seen"
    FIRST_SEEN = "first_seen"
    UNREAD_RATIO = "unread_ratio"


@dataclass(frozen=True, slots=True)
class DomainRow:
    domain: str
    senders: int
    mails_sent: int
    bytes: int
    unread: int
    unread_ratio: float
    list_unsubscribe: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    gmail_url: str


@dataclass(frozen=True, slots=True)
class DomainsPage:
    total: int  # domains matching
    total_messages: int  # all (not hidden) mail: the `mails_sent` of every domain add up to it
    domains: list[DomainRow]


_SORT_COLUMNS: dict[DomainSort, Any] = {
    DomainSort.MAILS_SENT: _D.mails_sent,
    DomainSort.DOMAIN: _D.domain,
    DomainSort.SENDERS: _D.senders,
    DomainSort.BYTES: _D.bytes,
    DomainSort.LAST_SEEN: _D.last_seen_unix,
    DomainSort.FIRST_SEEN: _D.first_seen_unix,
    DomainSort.UNREAD_RATIO: _RATIO,
}


def _ratio(unread: int, mails: int) -> float:
    return round(unread / max(mails, 1), 4)


def _domain_row(v: Any) -> DomainRow:
    domain, count, mails, size, unread, unsub, first, last = v
    return DomainRow(
        domain,
        count,
        mails,
        size,
        unread,
        _ratio(unread, mails),
        unsub,
        first,
        last,
        gmail_search_url(domain),
    )


def _sort_key(sort: DomainSort) -> Callable[[DomainRow], Any]:
    """The Python twin of the SQL order (NULL dates lowest, as SQLite sorts them), for merging adjusted rows."""
    attr = {
        DomainSort.MAILS_SENT: "mails_sent",
        DomainSort.DOMAIN: "domain",
        DomainSort.SENDERS: "senders",
        DomainSort.BYTES: "bytes",
        DomainSort.LAST_SEEN: "last_seen_unix",
        DomainSort.FIRST_SEEN: "first_seen_unix",
        DomainSort.UNREAD_RATIO: "unread_ratio",
    }[sort]
    if attr in ("last_seen_unix", "first_seen_unix"):
        return lambda r: (getattr(r, attr) is not None, getattr(r, attr) or 0)
    return lambda r: getattr(r, attr)


def _adjusted(row: DomainRow, hidden: tuple[int, int, int, int, int], seen: Seen) -> DomainRow | None:
    """A domain without its hidden senders (`hidden`: their sums; `seen`: the first and last mail of the rest)."""
    count, mails, size, unread, unsub = hidden
    if row.senders - count <= 0:
        return None
    left = row.mails_sent - mails
    return replace(
        row,
        senders=row.senders - count,
        mails_sent=left,
        bytes=row.bytes - size,
        unread=row.unread - unread,
        unread_ratio=_ratio(row.unread - unread, left),
        list_unsubscribe=row.list_unsubscribe - unsub,
        first_seen_unix=seen[0],
        last_seen_unix=seen[1],
    )


def domains_page(
    conn: Connection,
    *,
    q: str,
    sort: DomainSort,
    order: SortOrder,
    offset: int,
    limit: int,
    totals: Totals | None,
    hidden: HiddenByDomain,
    seen: SeenLookup,
) -> DomainsPage:
    """One page of domains. What the caller keeps per database change: `totals` (saves two passes over every domain
    row when there is no search), the hidden senders' sums per domain and `seen` (for the domains they are in)."""
    condition: ColumnElement[bool] = true()
    if q:
        pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        condition = _D.domain.like(pattern, escape="\\")
    column = _SORT_COLUMNS[sort]
    desc = order is SortOrder.DESC
    # As for senders: ties the same way as the value, except under `ix_domains_mails_sent (mails_sent DESC, domain)`.
    tie_opposite = sort is DomainSort.MAILS_SENT
    if desc:
        ordering = [column.desc(), _D.domain.asc() if tie_opposite else _D.domain.desc()]
    else:
        ordering = [column.asc(), _D.domain.desc() if tie_opposite else _D.domain.asc()]
    if sort is DomainSort.DOMAIN:
        ordering = [_D.domain.desc() if desc else _D.domain.asc()]
    if totals is not None and not q:
        total, all_messages = totals.domains, totals.messages
    else:
        total = conn.execute(select(func.count()).select_from(domains).where(condition)).scalar_one()
        all_messages = conn.execute(select(func.coalesce(func.sum(_D.mails_sent), 0))).scalar_one()
    # Unaffected domains come straight off the sort's index; the few with hidden senders are recomputed and
    # merged in at their place, so order and paging stay exact.
    unaffected = and_(condition, not_(in_values(_D.domain, hidden))) if hidden else condition
    stmt = select(*domains.c).where(unaffected).order_by(*ordering)
    if not hidden:  # nothing to merge: SQLite skips to the page itself
        page = [_domain_row(r) for r in conn.execute(stmt.limit(limit).offset(offset))]
        return DomainsPage(total=int(total), total_messages=int(all_messages), domains=page)
    rows = [_domain_row(r) for r in conn.execute(stmt.limit(min(offset + limit, _SQLITE_MAX_INT)))]
    extra: list[DomainRow] = []
    gone = 0
    hidden_messages = sum(h[1] for h in hidden.values())
    affected = [_domain_row(r) for r in conn.execute(select(*domains.c).where(condition, in_values(_D.domain, hidden)))]
    seen_by_domain = seen([r.domain for r in affected])
    for row in affected:
        adjusted = _adjusted(row, hidden[row.domain], seen_by_domain.get(row.domain, (None, None)))
        if adjusted is None:
            gone += 1
        else:
            extra.append(adjusted)
    if extra:
        key = _sort_key(sort)

        # SQL order: the sort value, then the domain (opposite to it only for `mails_sent`; see `ordering`).
        def full_key(r: DomainRow) -> Any:
            if sort is DomainSort.DOMAIN:
                return key(r)
            return (key(r), _Reverse(r.domain) if tie_opposite else r.domain)

        rows = list(heapq.merge(rows, sorted(extra, key=full_key, reverse=desc), key=full_key, reverse=desc))
    return DomainsPage(
        total=int(total) - gone,
        total_messages=int(all_messages) - hidden_messages,
        domains=rows[offset : offset + limit],
    )


class _Reverse:
    """Inverts the order of a value inside a sort key (the tie-break runs opposite to the main column)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Reverse) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reverse) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)
