"""The JSON API routes: thin, each reads through `Database`/`queries` or delegates to `RunControl`.

Every route declares its pydantic answer (`viewer.web.schemas`), which is also the OpenAPI document's contract.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import Connection

from shared.errors import ErrorKind
from shared.summary import SenderRow, all_senders
from shared.timeutil import Clock
from viewer.errors import ApiError
from viewer.query import filter_match, rollup_queries, sender_queries, volume_queries
from viewer.query.cache import ResponseCache
from viewer.query.database import Database
from viewer.query.filters import SenderFilter
from viewer.query.hidden_facts import EMPTY, HiddenSet
from viewer.query.index_keeper import ChangeKey, IndexKeeper, KeptIndex
from viewer.query.queries import DbState
from viewer.query.rollup_queries import DomainSort
from viewer.query.sender_index import IndexedMatch, SenderIndex
from viewer.query.sender_queries import SenderListRow, SendersPage, SortKey, SortOrder
from viewer.web.cached import answer
from viewer.web.deps import ClockDep, DatabaseDep, StateDep
from viewer.web.export import build_csv
from viewer.web.filter_params import FilterDep
from viewer.web.schemas import (
    ERROR_RESPONSES,
    MAX_ID,
    DomainOut,
    DomainsOut,
    HiddenBody,
    HiddenOut,
    MonthOut,
    SenderOut,
    SenderRowOut,
    SendersOut,
    StatusOut,
    SummaryOut,
    VolumeOut,
)

router = APIRouter(prefix="/api", responses=ERROR_RESPONSES)

# The paging of every list route: an offset SQLite can bind, and a page the page can draw.
Offset = Annotated[int, Query(ge=0, le=MAX_ID)]
Limit = Annotated[int, Query(ge=1, le=500)]


def _sender(row: SenderRow) -> SenderOut:
    return SenderOut(**asdict(row))


def _json(model: SendersOut | StatusOut | DomainsOut | VolumeOut) -> bytes:
    return model.model_dump_json().encode()


@router.get("/summary")
def summary(database: DatabaseDep, clock: ClockDep) -> SummaryOut:
    now = int(clock())
    if database.exists():
        with database.connect() as conn:
            if database.require_ready(conn).state is DbState.READY:
                senders = all_senders(conn)
                return SummaryOut(
                    total_messages=sum(s.mails_sent for s in senders),
                    senders=[_sender(s) for s in senders],
                    generated_at_unix=now,
                )
    return SummaryOut(total_messages=0, senders=[], generated_at_unix=now)


@router.get("/senders", response_model=SendersOut)
async def senders(
    state: StateDep,
    f: FilterDep,
    sort: SortKey = SortKey.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
    offset: Offset = 0,
    limit: Limit = 50,
) -> Response:
    database, clock, cache = state.database, state.clock, state.cache
    key = ("senders", f.key(), sort, order, offset, limit)

    def compute() -> bytes:
        return _json(_senders(database, state.index, clock, f, sort, order, offset, limit))

    # Polled: the cached answer is the serialised model, so a hit costs no encoding at all.
    return Response(await answer(cache, key, database.change_key(), compute), media_type="application/json")


@dataclass(frozen=True, slots=True)
class _Hidden:
    """A request's hidden senders, and what later lookups for them use: the files' version and, when it holds
    that version, the viewer's copy of the senders (`viewer.query.sender_index`), which finds them without SQLite."""

    senders: HiddenSet
    version: ChangeKey
    memory: SenderIndex | None


def _hidden(database: Database, index: IndexKeeper, conn: Connection, exclude: tuple[str, ...]) -> _Hidden:
    """The hidden senders that exist and their sums, kept per set while the files are unchanged."""
    if not exclude:
        return _Hidden(EMPTY, database.change_key(), None)
    kept = index.get()
    version, memory = (kept.key, kept.index) if kept is not None else (database.change_key(), None)
    return _Hidden(database.hidden.hidden_set(conn, version, exclude, memory), version, memory)


def _row_out(row: SenderListRow) -> SenderRowOut:
    return SenderRowOut(**asdict(row))


def _senders(
    database: Database,
    index: IndexKeeper,
    clock: Clock,
    f: SenderFilter,
    sort: SortKey,
    order: SortOrder,
    offset: int,
    limit: int,
) -> SendersOut:
    now = int(clock())
    if database.exists():
        with database.connect() as conn:
            snap = database.require_ready(conn)
            if snap.totals is not None and snap.state is DbState.READY:
                hidden = _hidden(database, index, conn, f.exclude).senders
                everyone = (snap.totals.senders - hidden.senders, snap.totals.messages - hidden.messages)
                kept = index.get() if f.narrows and SenderIndex.covers(f) else None
                if kept is not None:
                    page = _indexed_page(conn, database.memo, kept, f, hidden, sort, order, offset, limit)
                else:
                    counted: filter_match.Match | tuple[int, int] = everyone
                    if f.narrows:  # the same filter on another page or sort, or polled: counted once
                        counted = database.memo.get(
                            ("match", f.key()), database.change_key(), lambda: filter_match.match(conn, f)
                        )
                    page = sender_queries.senders_page(
                        conn, f=f, sort=sort, order=order, offset=offset, limit=limit, counted=counted
                    )
                top = sender_queries.top_sender(conn, exclude=f.exclude)
                return SendersOut(
                    total=page.total,
                    matched_messages=page.matched_messages,
                    senders=[_row_out(s) for s in page.senders],
                    total_messages=snap.totals.messages - hidden.messages,
                    total_senders=snap.totals.senders - hidden.senders,
                    top_sender=_row_out(top) if top is not None else None,
                    generated_at_unix=now,
                )
    return SendersOut(
        total=0,
        matched_messages=0,
        senders=[],
        total_messages=0,
        total_senders=0,
        top_sender=None,
        generated_at_unix=now,
    )


def _indexed_page(
    conn: Connection,
    memo: ResponseCache,
    kept: KeptIndex,
    f: SenderFilter,
    hidden: HiddenSet,
    sort: SortKey,
    order: SortOrder,
    offset: int,
    limit: int,
) -> SendersPage:
    """A filtered page from the senders held in memory: the matches are found once per filter and version (kept
    for later pages and sorts), the page's ids come in the sort's order, and only those rows are read."""

    def select() -> IndexedMatch:
        return kept.index.select(f, hidden_ids=hidden.ids)

    chosen = memo.get(("indexed", f.key()), kept.key, select)
    ids = kept.index.page(chosen, sort=sort, order=order, offset=offset, limit=limit)
    return SendersPage(chosen.total, chosen.messages, sender_queries.rows_by_ids(conn, ids))


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
    database, clock, cache = state.database, state.clock, state.cache
    key = ("domains", f.q, f.exclude, sort, order, offset, limit)

    def compute() -> bytes:
        now = int(clock())
        page = None
        if database.exists():
            with database.connect() as conn:
                snap = database.require_ready(conn)
                if snap.state is DbState.READY:
                    hidden = _hidden(database, state.index, conn, f.exclude)
                    page = rollup_queries.domains_page(
                        conn,
                        q=f.q,
                        sort=sort,
                        order=order,
                        offset=offset,
                        limit=limit,
                        totals=snap.totals,
                        hidden=hidden.senders.by_domain,
                        seen=database.hidden.seen_without(conn, hidden.version, hidden.senders, hidden.memory),
                    )
        if page is None:
            return _json(DomainsOut(total=0, total_messages=0, domains=[], generated_at_unix=now))
        rows = [DomainOut(**asdict(d)) for d in page.domains]
        out = DomainsOut(total=page.total, total_messages=page.total_messages, domains=rows, generated_at_unix=now)
        return _json(out)

    return Response(await answer(cache, key, database.change_key(), compute), media_type="application/json")


@router.get("/volume", response_model=VolumeOut)
async def volume(
    state: StateDep,
    f: FilterDep,
    sender: Annotated[str | None, Query(max_length=320, description="one sender's months")] = None,
) -> Response:
    """Mail per calendar month: everything (hidden senders left out), one `sender`, or one `domain`."""
    database, cache = state.database, state.cache
    if sender is not None and f.domain is not None:
        raise ApiError(422, ErrorKind.BAD_SCOPE, "ask for one sender or one domain, not both")
    key = ("volume", sender, f.domain, f.exclude)

    def compute() -> bytes:
        found: volume_queries.Volume | None = volume_queries.Volume([], 0, 0)
        if database.exists():
            with database.connect() as conn:
                snap = database.require_ready(conn)
                if snap.totals is not None and snap.state is DbState.READY:
                    hidden = _hidden(database, state.index, conn, f.exclude)
                    found = volume_queries.volume(
                        conn,
                        sender=sender,
                        domain=f.domain,
                        total=snap.totals.messages - hidden.senders.messages,
                        hidden=hidden.senders,
                        hidden_months=lambda: database.hidden.months(conn, hidden.version, f.exclude),
                    )
        if found is None:
            raise ApiError(404, ErrorKind.NOT_FOUND, "no such sender or domain in this database")
        months = [MonthOut(**asdict(m)) for m in found.months]
        return _json(VolumeOut(months=months, undated=found.undated))

    return Response(await answer(cache, key, database.change_key(), compute), media_type="application/json")


@router.get(
    "/export.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "matching senders"}},
)
def export_csv(
    database: DatabaseDep,
    f: FilterDep,
    sort: SortKey = SortKey.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
) -> StreamingResponse:
    """The senders the page shows with the same filters and sort, every page at once; dates in ISO 8601 (UTC)."""
    # Built completely before the first byte is sent: a read error is a 503, never a cut-off 200.
    body = build_csv(database, f=f, sort=sort, order=order)
    return StreamingResponse(
        body.chunks(),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": 'attachment; filename="gmail-stats-senders.csv"',
            "Content-Length": str(body.size),
        },
    )


@router.post("/hidden")
def register_hidden(body: HiddenBody, state: StateDep) -> HiddenOut:
    """Registers the page's hidden senders (kept in memory, by content) for `hidden=` on the read routes."""
    key, members = state.hidden.add(body.senders)
    return HiddenOut(hidden=key, count=len(members))
