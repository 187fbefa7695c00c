"""Per-domain rows and mail per calendar month, read from the rollups the ingesters keep (`domains`, `months`,
`domain_months`, `sender_months`).

Hidden senders are subtracted exactly: their own rows are few, so a page stays an index walk plus a merge.
Read-only; returns dataclasses.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, literal_column, not_, select, true

from shared.schema.models import domain_months, domains, months, sender_months, senders
from shared.sender_list import gmail_search_url
from viewer.query.hidden import HiddenSet, Seen, months_of, seen_without
from viewer.query.queries import Totals
from viewer.query.sender_queries import SortOrder, index_order
from viewer.query.sql_lists import contains, in_values

_D = domains.c
# SQLite's largest integer: `offset + limit` of a page far past the end must still bind (the API allows any int64).
_SQLITE_MAX_INT = 2**63 - 1
_RATIO: ColumnElement[float] = literal_column("(CAST(domains.unread AS REAL) / max(domains.mails_sent, 1))")
MAX_FILLED_MONTHS = 1200


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


@dataclass(frozen=True, slots=True)
class MonthCount:
    month: str
    messages: int
    bytes: int


def _domain_row(v: Any) -> DomainRow:
    domain, count, mails, size, unread, unsub, first, last = v
    ratio = round(unread / max(mails, 1), 4)
    return DomainRow(domain, count, mails, size, unread, ratio, unsub, first, last, gmail_search_url(domain))


def _field(sort: DomainSort) -> str:
    """The `DomainRow` field (and `domains` column) a sort reads."""
    return f"{sort.value}_unix" if sort in (DomainSort.LAST_SEEN, DomainSort.FIRST_SEEN) else sort.value


def _merge_key(sort: DomainSort) -> Callable[[DomainRow], Any]:
    """The Python twin of the SQL order (NULL dates lowest, as SQLite sorts them), for merging adjusted rows. Under
    `mails_sent`, whose ties run opposite to it, the count is negated: merge in the reverse direction."""
    field = _field(sort)
    if sort is DomainSort.MAILS_SENT:
        return lambda r: (-r.mails_sent, r.domain)
    if field.endswith("_unix"):
        return lambda r: (getattr(r, field) is not None, getattr(r, field) or 0, r.domain)
    return lambda r: (getattr(r, field), r.domain)


def _adjusted(row: DomainRow, hidden: tuple[int, int, int, int, int], seen: Seen) -> DomainRow | None:
    """A domain without its hidden senders (`hidden`: their sums; `seen`: the first and last mail of the rest)."""
    sums = (row.senders, row.mails_sent, row.bytes, row.unread, row.list_unsubscribe)
    left = [total - gone for total, gone in zip(sums, hidden, strict=True)]
    return _domain_row((row.domain, *left, *seen)) if left[0] > 0 else None


def domains_page(
    conn: Connection,
    *,
    q: str,
    sort: DomainSort,
    order: SortOrder,
    offset: int,
    limit: int,
    totals: Totals | None,
    hidden: HiddenSet,
) -> DomainsPage:
    """One page of domains. What the caller keeps per database change: `totals` (saves two passes over every domain
    row when there is no search) and the hidden senders' sums."""
    condition: ColumnElement[bool] = contains(_D.domain, q) if q else true()
    desc = order is SortOrder.DESC
    column = _RATIO if sort is DomainSort.UNREAD_RATIO else _D[_field(sort)]
    # As for senders: ties the same way as the value, except under `ix_domains_mails_sent (mails_sent DESC, domain)`.
    ordering = index_order(column, _D.domain, desc=desc, ties_opposite=sort is DomainSort.MAILS_SENT)
    if totals is not None and not q:
        total, all_messages = totals.domains, totals.messages
    else:
        total = conn.execute(select(func.count()).select_from(domains).where(condition)).scalar_one()
        all_messages = conn.execute(select(func.coalesce(func.sum(_D.mails_sent), 0))).scalar_one()
    by_domain = hidden.by_domain
    # Unaffected domains come straight off the sort's index; the few with hidden senders are recomputed and
    # merged in at their place, so order and paging stay exact.
    unaffected = and_(condition, not_(in_values(_D.domain, by_domain))) if by_domain else condition
    stmt = select(*domains.c).where(unaffected).order_by(*ordering)
    if not by_domain:  # nothing to merge: SQLite skips to the page itself
        page = [_domain_row(r) for r in conn.execute(stmt.limit(limit).offset(offset))]
        return DomainsPage(total=int(total), total_messages=int(all_messages), domains=page)
    rows = [_domain_row(r) for r in conn.execute(stmt.limit(min(offset + limit, _SQLITE_MAX_INT)))]
    affected = [
        _domain_row(r) for r in conn.execute(select(*domains.c).where(condition, in_values(_D.domain, by_domain)))
    ]
    seen = seen_without(conn, [r.domain for r in affected], hidden)
    adjusted = [_adjusted(r, by_domain[r.domain], seen.get(r.domain, (None, None))) for r in affected]
    extra = [r for r in adjusted if r is not None]
    if extra:
        key, reverse = _merge_key(sort), desc != (sort is DomainSort.MAILS_SENT)
        rows = list(heapq.merge(rows, sorted(extra, key=key, reverse=reverse), key=key, reverse=reverse))
    return DomainsPage(
        total=int(total) - (len(adjusted) - len(extra)),
        total_messages=int(all_messages) - hidden.messages,
        domains=rows[offset : offset + limit],
    )


def _month_number(label: str) -> int:
    year, month = map(int, label.split("-"))
    return year * 12 + month - 1


def _fill(found: dict[str, list[int]]) -> list[MonthCount]:
    """Every month from the first to the last with mail, gaps as zeros (a chart's x axis needs them)."""
    present = sorted(m for m, (n, b) in found.items() if n or b)
    if not present:
        return []
    first, last = _month_number(present[0]), _month_number(present[-1])
    if last - first > MAX_FILLED_MONTHS:  # an absurd date: no zero-filled centuries
        return [MonthCount(m, *found[m]) for m in present]
    labels = (f"{n // 12:04d}-{n % 12 + 1:02d}" for n in range(first, last + 1))
    return [MonthCount(m, *found.get(m, [0, 0])) for m in labels]


def volume(
    conn: Connection, *, sender: str | None, domain: str | None, total: int, hidden: HiddenSet
) -> tuple[list[MonthCount], int] | None:
    """Monthly counts of one sender, one domain, or everything less the `hidden` senders (`total`: the messages
    not hidden), and the undated messages; None when unknown.

    The undated count is the scope's message count minus its dated months, so the answer adds up exactly.
    """
    subtract: Iterable[str] = ()
    messages: int | None
    if sender is not None:
        sm = sender_months.c
        messages = conn.execute(select(senders.c.mails_sent).where(senders.c.sender == sender)).scalar()
        rows = select(sm.month, sm.messages, sm.bytes).where(sm.sender == sender)
    elif domain is not None:
        dm = domain_months.c
        messages = conn.execute(select(_D.mails_sent).where(_D.domain == domain)).scalar()
        if messages is not None and domain in hidden.by_domain:
            messages -= hidden.by_domain[domain][1]
            subtract = hidden.members_by_domain[domain]
        rows = select(dm.month, dm.messages, dm.bytes).where(dm.domain == domain)
    else:
        messages = total
        subtract = [name for names in hidden.members_by_domain.values() for name in names]
        rows = select(months.c.month, months.c.messages, months.c.bytes)
    if messages is None:
        return None
    found = {str(month): [int(n), int(b)] for month, n, b in conn.execute(rows)}
    for month, (n, b) in months_of(conn, subtract).items():
        sums = found.setdefault(month, [0, 0])
        sums[0] -= n
        sums[1] -= b
    series = _fill(found)
    return series, messages - sum(m.messages for m in series)
