"""Mail per calendar month, read from the rollups the ingesters keep (`months`, `domain_months`, `sender_months`).

Hidden senders are subtracted exactly: their own monthly rows are few.
Read-only; returns dataclasses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, select

from shared.schema.models import domain_months, domains, months, sender_months, senders
from viewer.query.hidden_queries import HiddenSet, MonthSums, months_of

_D = domains.c


@dataclass(frozen=True, slots=True)
class MonthCount:
    month: str
    messages: int
    bytes: int


@dataclass(frozen=True, slots=True)
class Volume:
    months: list[MonthCount]
    undated: int
    messages: int


MAX_FILLED_MONTHS = 1200


def _months_between(first: str, last: str) -> int:
    (y1, m1), (y2, m2) = (map(int, first.split("-")), map(int, last.split("-")))
    return (y2 - y1) * 12 + (m2 - m1)


def _fill(found: dict[str, list[int]]) -> list[MonthCount]:
    """Every month from the first to the last with mail, gaps as zeros (a chart's x axis needs them)."""
    present = sorted(m for m, (n, b) in found.items() if n or b)
    if not present:
        return []
    if _months_between(present[0], present[-1]) > MAX_FILLED_MONTHS:  # an absurd date: no zero-filled centuries
        return [MonthCount(m, *found[m]) for m in present]
    year, month = map(int, present[0].split("-"))
    out: list[MonthCount] = []
    while True:
        label = f"{year:04d}-{month:02d}"
        n, b = found.get(label, [0, 0])
        out.append(MonthCount(label, n, b))
        if label >= present[-1]:
            return out
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def volume(
    conn: Connection,
    *,
    sender: str | None,
    domain: str | None,
    total: int,
    hidden: HiddenSet,
    hidden_months: Callable[[], MonthSums],
) -> Volume | None:
    """Monthly counts of one sender, one domain, or everything less the `hidden` senders (`total`: the messages
    not hidden; `hidden_months`: their mail per month, asked for only when needed); None when unknown.

    `undated` is the scope's message count minus its dated months, so the answer adds up exactly.
    """
    found: dict[str, list[int]] = {}
    subtract: MonthSums = {}
    if sender is not None:
        known = conn.execute(select(senders.c.mails_sent).where(senders.c.sender == sender)).first()
        if known is None:
            return None
        messages = int(known[0])
        sm = sender_months.c
        rows = conn.execute(select(sm.month, sm.messages, sm.bytes).where(sm.sender == sender))
    elif domain is not None:
        known = conn.execute(select(_D.mails_sent).where(_D.domain == domain)).first()
        if known is None:
            return None
        in_domain = hidden.members_by_domain.get(domain, ())
        messages = int(known[0]) - (hidden.by_domain[domain][1] if in_domain else 0)
        dm = domain_months.c
        rows = conn.execute(select(dm.month, dm.messages, dm.bytes).where(dm.domain == domain))
        subtract = months_of(conn, in_domain)
    else:
        messages = total
        rows = conn.execute(select(months.c.month, months.c.messages, months.c.bytes))
        subtract = hidden_months() if hidden.senders else {}
    for month, n, b in rows:
        found[str(month)] = [int(n), int(b)]
    for month, (n, b) in subtract.items():
        sums = found.setdefault(month, [0, 0])
        sums[0] -= n
        sums[1] -= b
    series = _fill(found)
    return Volume(months=series, undated=messages - sum(m.messages for m in series), messages=messages)
