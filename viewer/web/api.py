"""The JSON API routes: thin, each reads through `Database`/`queries` or delegates to `RunControl`.

Every route declares its pydantic answer (`viewer.web.schemas`), which is also the OpenAPI document's contract.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from sqlalchemy import Connection

from shared.errors import ErrorKind
from shared.summary import SenderRow, all_senders, summary_document
from viewer.errors import ApiError
from viewer.query import filter_match, rollup_queries, sender_queries
from viewer.query.cache import SnapshotCache, weight
from viewer.query.database import Snapshot
from viewer.query.filters import SenderFilter
from viewer.query.hidden import HiddenSet, hidden_set
from viewer.query.queries import DbState, Totals
from viewer.query.rollup_queries import DomainSort
from viewer.query.sender_queries import SortKey, SortOrder
from viewer.web.answers import cached_answer, generation_headers
from viewer.web.deps import FilterDep, StateDep
from viewer.web.schemas import (
    MAX_ID,
    DomainOut,
    DomainsOut,
    HiddenBody,
    HiddenOut,
    MonthOut,
    SenderRowOut,
    SendersOut,
    SummaryOut,
    VolumeOut,
)

router = APIRouter(prefix="/api")

# The paging of every list route: an offset SQLite can bind, and a page the page can draw.
Offset = Annotated[int, Query(ge=0, le=MAX_ID)]
Limit = Annotated[int, Query(ge=1, le=500)]


@router.get("/summary")
def summary(state: StateDep, response: Response) -> SummaryOut:
    senders: list[SenderRow] = []
    with state.database.read_snapshot() as read:
        if read is not None:
            conn, snap = read
            response.headers.update(generation_headers(snap.generation))
            if snap.state is DbState.READY:
                senders = all_senders(conn)
        # The document `gmail-stats export` writes, built inside the block: an unreadable row is a 503.
        return SummaryOut(**summary_document(senders, now=state.clock()))


def _hidden(cache: SnapshotCache, snap: Snapshot, conn: Connection, exclude: tuple[str, ...]) -> HiddenSet:
    """The hidden senders that exist and their sums, once per set and generation (every route subtracts them)."""
    return cache.get(snap.generation, ("hidden", exclude), lambda: hidden_set(conn, exclude))


@router.get("/senders", response_model=SendersOut)
async def senders(
    state: StateDep,
    f: FilterDep,
    sort: SortKey = SortKey.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
    offset: Offset = 0,
    limit: Limit = 50,
    exact_count: Annotated[bool, Query(description="count past 30,000 matches (slower on a broad filter)")] = False,
) -> Response:
    cache, now = state.database.cache, int(state.clock())

    def page(conn: Connection, snap: Snapshot, totals: Totals) -> SendersOut:
        hidden = _hidden(cache, snap, conn, f.exclude)
        counted = filter_match.Match(totals.senders - hidden.senders, totals.messages - hidden.messages, None)
        if f.narrows:  # the same filter on another page or sort, or polled: counted once per generation
            counted = cache.get(
                snap.generation,
                ("match", f, exact_count),
                lambda: filter_match.match(conn, f, exact=exact_count),
                lambda found: weight(found.ids),
            )
        found = sender_queries.senders_page(
            conn, f=f, sort=sort, order=order, offset=offset, limit=limit, counted=counted
        )
        top = sender_queries.top_sender(conn, exclude=f.exclude)
        return SendersOut(
            total=counted.total,
            total_exact=counted.exact,
            matched_messages=counted.messages,
            senders=[SenderRowOut(**asdict(s)) for s in found],
            total_messages=totals.messages - hidden.messages,
            total_senders=totals.senders - hidden.senders,
            top_sender=SenderRowOut(**asdict(top)) if top is not None else None,
            generated_at_unix=now,
        )

    def empty() -> SendersOut:
        return SendersOut(
            total=0,
            total_exact=True,
            matched_messages=0,
            senders=[],
            total_messages=0,
            total_senders=0,
            top_sender=None,
            generated_at_unix=now,
        )

    key = ("senders", f, sort, order, offset, limit, exact_count)
    return await cached_answer(state.database, key, page, empty)


def domain_page(
    conn: Connection,
    snap: Snapshot,
    cache: SnapshotCache,
    f: SenderFilter,
    *,
    sort: DomainSort,
    order: SortOrder,
    offset: int,
    limit: int,
) -> rollup_queries.DomainsPage:
    """The domains for `q` with the hidden senders of `f` left out: `/api/domains` and its CSV export."""
    hidden = _hidden(cache, snap, conn, f.exclude)
    return rollup_queries.domains_page(
        conn,
        q=f.q,
        sort=sort,
        order=order,
        offset=offset,
        limit=limit,
        totals=snap.totals,
        hidden=hidden,
    )


@router.get("/domains", response_model=DomainsOut)
async def domains(
    state: StateDep,
    f: FilterDep,
    sort: DomainSort = DomainSort.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
    offset: Offset = 0,
    limit: Limit = 50,
) -> Response:
    """Senders rolled up per registrable domain. Takes `q` (a substring of the domain) and `exclude=`; the other
    sender filters do not apply to a whole domain."""
    cache, now = state.database.cache, int(state.clock())

    def page(conn: Connection, snap: Snapshot, _totals: Totals) -> DomainsOut:
        found = domain_page(conn, snap, cache, f, sort=sort, order=order, offset=offset, limit=limit)
        rows = [DomainOut(**asdict(d)) for d in found.domains]
        return DomainsOut(total=found.total, total_messages=found.total_messages, domains=rows, generated_at_unix=now)

    def empty() -> DomainsOut:
        return DomainsOut(total=0, total_messages=0, domains=[], generated_at_unix=now)

    key = ("domains", f.q, f.exclude, sort, order, offset, limit)
    return await cached_answer(state.database, key, page, empty)


@router.get("/volume", response_model=VolumeOut)
async def volume(
    state: StateDep,
    f: FilterDep,
    sender: Annotated[str | None, Query(max_length=320, description="one sender's months")] = None,
) -> Response:
    """Mail per calendar month: everything (hidden senders left out), one `sender`, or one `domain`."""
    if sender is not None and f.domain is not None:
        raise ApiError(422, ErrorKind.BAD_SCOPE, "ask for one sender or one domain, not both")

    def series(conn: Connection, snap: Snapshot, totals: Totals) -> VolumeOut:
        hidden = _hidden(state.database.cache, snap, conn, f.exclude)
        found = rollup_queries.volume(
            conn, sender=sender, domain=f.domain, total=totals.messages - hidden.messages, hidden=hidden
        )
        if found is None:
            raise ApiError(404, ErrorKind.NOT_FOUND, "no such sender or domain in this database")
        series, undated = found
        return VolumeOut(months=[MonthOut(**asdict(m)) for m in series], undated=undated)

    key = ("volume", sender, f.domain, f.exclude)
    return await cached_answer(state.database, key, series, lambda: VolumeOut(months=[], undated=0))


@router.post("/hidden")
def register_hidden(body: HiddenBody, state: StateDep) -> HiddenOut:
    """Registers the page's hidden senders (kept in memory, by content) for `hidden=` on the read routes."""
    key, members = state.hidden.add(body.senders)
    return HiddenOut(hidden=key, count=len(members))
