"""The JSON API routes: thin, each reads through `Database`/`queries` or delegates to `RunControl`.

Every route declares its pydantic answer (`viewer.schemas`), which is also the OpenAPI document's contract.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import asdict
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from shared.errors import RETRY_WARNING_PREFIX, ErrorKind
from shared.lock import is_lock_held
from shared.models import RunState
from shared.resume import import_command, runs_command, scan_command
from shared.runs import Run, list_runs, open_run
from shared.summary import SenderRow, all_senders
from shared.timeutil import Clock
from viewer import rollup_queries, sender_queries, short_search
from viewer.cache import ResponseCache
from viewer.control import LaunchAsk, RunControl
from viewer.database import Database
from viewer.deps import CacheDep, ClockDep, ControlDep, DatabaseDep, SettingsDep, StateDep
from viewer.errors import ApiError
from viewer.export import build_csv
from viewer.filters import FilterDep, SenderFilter
from viewer.imports import list_mbox_files, relative_to_import_dir
from viewer.queries import DbState
from viewer.rollup_queries import DomainSort
from viewer.schemas import (
    MAX_ID,
    CancelledOut,
    DomainOut,
    DomainsOut,
    ErrorOut,
    HiddenBody,
    HiddenOut,
    ImportFileOut,
    ImportsOut,
    LaunchBody,
    LaunchedOut,
    MonthOut,
    RunLogOut,
    RunOut,
    RunsOut,
    SenderOut,
    SenderRowOut,
    SendersOut,
    StatusOut,
    SummaryOut,
    VolumeOut,
)
from viewer.sender_queries import SenderListRow, SortKey, SortOrder

# Every route may answer with the error shape: 4XX for the request (including the guard's 403/413/415), 503 for
# a database it cannot read right now. Declaring 422 here also replaces FastAPI's own `{"detail": ...}` schema.
_ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorOut, "description": "the request was refused"},
    503: {"model": ErrorOut, "description": "the database is busy, unreadable or too new"},
}
_LAUNCH_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    500: {"model": ErrorOut, "description": "the ingester could not be started (`spawn_failed`, with a `hint`)"},
}
router = APIRouter(prefix="/api", responses=_ERRORS)

RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="a run id from /api/runs")]
# The paging of every list route: an offset SQLite can bind, and a page the page can draw.
Offset = Annotated[int, Query(ge=0, le=MAX_ID)]
Limit = Annotated[int, Query(ge=1, le=500)]


def _sender(row: SenderRow) -> SenderOut:
    return SenderOut(**asdict(row))


def _run_out(run: Run, control: RunControl) -> RunOut:
    """The public shape of a run: no PID (the page never signals), the import file relative to the folder."""
    data = run.public_dict()
    del data["pid"]
    if run.mbox_path is not None:
        inside = relative_to_import_dir(control.settings.import_dir, run.mbox_path)
        data["mbox_path"] = inside if inside is not None else FsPath(run.mbox_path).name
    return RunOut(**data, owned=control.owns(run) is not None)


def is_retrying(state: str, warnings_tail: list[str]) -> bool:
    """A running run whose latest warning is a retry (the ingester writes them with `RETRY_WARNING_PREFIX`)."""
    return state == RunState.RUNNING and bool(warnings_tail) and warnings_tail[-1].startswith(RETRY_WARNING_PREFIX)


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
        return _json(_senders(database, clock, f, sort, order, offset, limit))

    # Polled: the cached answer is the serialised model, so a hit costs no encoding at all.
    return Response(await _cached(cache, key, database.change_key(), compute), media_type="application/json")


def _row_out(row: SenderListRow) -> SenderRowOut:
    return SenderRowOut(**asdict(row))


def _senders(
    database: Database, clock: Clock, f: SenderFilter, sort: SortKey, order: SortOrder, offset: int, limit: int
) -> SendersOut:
    now = int(clock())
    if database.exists():
        with database.connect() as conn:
            snap = database.require_ready(conn)
            if snap.totals is not None and snap.state is DbState.READY:
                hidden_senders, hidden_messages = sender_queries.excluded_sums(conn, f.exclude)
                everyone = (snap.totals.senders - hidden_senders, snap.totals.messages - hidden_messages)
                match = None
                if short_search.applies(f):  # the same search on another page or sort: counted once
                    condition = sender_queries.where(f)
                    match = database.memo.get(
                        ("match", f.key()), database.change_key(), lambda: short_search.match(conn, condition)
                    )
                page = sender_queries.senders_page(
                    conn,
                    f=f,
                    sort=sort,
                    order=order,
                    offset=offset,
                    limit=limit,
                    known=None if f.narrows else everyone,
                    match=match,
                )
                top = sender_queries.top_sender(conn, exclude=f.exclude)
                return SendersOut(
                    total=page.total,
                    matched_messages=page.matched_messages,
                    senders=[_row_out(s) for s in page.senders],
                    total_messages=snap.totals.messages - hidden_messages,
                    total_senders=snap.totals.senders - hidden_senders,
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
                if database.require_ready(conn).state is DbState.READY:
                    page = rollup_queries.domains_page(
                        conn, q=f.q, exclude=f.exclude, sort=sort, order=order, offset=offset, limit=limit
                    )
        if page is None:
            return _json(DomainsOut(total=0, total_messages=0, domains=[], generated_at_unix=now))
        rows = [DomainOut(**asdict(d)) for d in page.domains]
        out = DomainsOut(total=page.total, total_messages=page.total_messages, domains=rows, generated_at_unix=now)
        return _json(out)

    return Response(await _cached(cache, key, database.change_key(), compute), media_type="application/json")


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
        found: rollup_queries.Volume | None = rollup_queries.Volume([], 0, 0)
        if database.exists():
            with database.connect() as conn:
                snap = database.require_ready(conn)
                if snap.totals is not None and snap.state is DbState.READY:
                    _, hidden = sender_queries.excluded_sums(conn, f.exclude)
                    found = rollup_queries.volume(
                        conn,
                        sender=sender,
                        domain=f.domain,
                        exclude=f.exclude,
                        total=snap.totals.messages - hidden,
                    )
        if found is None:
            raise ApiError(404, ErrorKind.NOT_FOUND, "no such sender or domain in this database")
        months = [MonthOut(**asdict(m)) for m in found.months]
        return _json(VolumeOut(months=months, undated=found.undated))

    return Response(await _cached(cache, key, database.change_key(), compute), media_type="application/json")


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


@router.get("/status", response_model=StatusOut)
async def status(state: StateDep) -> Response:
    """Polled by every open page: a fresh cached answer is served on the event loop (no thread hop, no wait for
    the GIL); only a miss reads the database, in the threadpool."""
    database, control, settings, cache = state.database, state.control, state.settings, state.cache
    clock, rates, csrf_token = state.clock, state.rates, state.csrf_token
    if control.reap_due():
        await run_in_threadpool(control.reap)
    lock_held = is_lock_held(settings.db)

    def compute() -> bytes:
        state = DbState.MISSING
        active = None
        active_out = last_out = None
        mixed, unrepaired = False, 0
        if database.exists():
            with database.connect() as conn:
                snap = database.snapshot(conn)
                state = snap.state
                if database.schema_ready(conn):
                    # An open row without the lock belongs to a dead ingester: it is history, not activity.
                    active = open_run(conn) if lock_held else None
                    recent = list_runs(conn, limit=2)
                    last = next((run for run in recent if active is None or run.run_id != active.run_id), None)
                    # Built inside the block: a malformed row is a 503 `db_unreadable`, not a 500.
                    active_out = _run_out(active, control) if active is not None else None
                    last_out = _run_out(last, control) if last is not None else None
                if snap.mix is not None:
                    mixed, unrepaired = snap.mix.mixed_sources, snap.mix.unrepaired_count
        progress = rates.observe(active)
        document = StatusOut(
            db=str(state),
            ingest_lock_held=lock_held,
            active_run=active_out,
            last_run=last_out,
            owns_active_run=control.owns(active) is not None,
            mixed_sources=mixed,
            unrepaired_count=unrepaired,
            rate_per_sec=progress.rate_per_sec,
            eta_seconds=progress.eta_seconds,
            retrying=active_out is not None and is_retrying(active_out.state, active_out.warnings_tail),
            csrf_token=csrf_token,
            now_unix=0,
        )
        # Serialised once per change; each answer only appends its own clock reading.
        return document.model_dump_json(exclude={"now_unix"}).encode()[:-1]

    head: bytes = await _cached(cache, "status", (database.change_key(), lock_held), compute)
    return Response(head + b',"now_unix":%d}' % int(clock()), media_type="application/json")


async def _cached(cache: ResponseCache, key: Hashable, version: Hashable, compute: Callable[[], Any]) -> Any:
    """A fresh cached answer straight from the event loop; a miss computes (reads the database) in the threadpool."""
    found = cache.peek(key, version)
    if found is None:
        found = await run_in_threadpool(cache.get, key, version, compute)
    return found


@router.post("/hidden")
def register_hidden(body: HiddenBody, state: StateDep) -> HiddenOut:
    """Registers the page's hidden senders (kept in memory, by content) for `hidden=` on the read routes."""
    key, members = state.hidden.add(body.senders)
    return HiddenOut(hidden=key, count=len(members))


@router.get("/runs")
def runs(
    database: DatabaseDep, control: ControlDep, clock: ClockDep, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> RunsOut:
    out: list[RunOut] = []
    if database.exists():
        with database.connect() as conn:
            if database.schema_ready(conn):
                out = [_run_out(run, control) for run in list_runs(conn, limit=limit)]
    return RunsOut(runs=out, now_unix=int(clock()))


@router.get("/imports")
def imports(settings: SettingsDep) -> ImportsOut:
    shown, style = settings.shown_import_dir(), settings.command_style
    files = [
        ImportFileOut(**asdict(f), command=import_command(path=f"{shown.rstrip('/')}/{f.path}", style=style))
        for f in list_mbox_files(settings.import_dir)
    ]
    return ImportsOut(
        import_dir=shown,
        import_dir_exists=settings.import_dir.is_dir(),
        files=files,
        import_command=import_command(path="path/to/file.mbox", style=style),
        scan_command=scan_command(style),
        runs_command=runs_command(style),
    )


@router.post("/runs", status_code=202, responses=_LAUNCH_ERRORS)
def start_run(body: LaunchBody, control: ControlDep, cache: CacheDep) -> LaunchedOut:
    cache.clear()
    try:
        run_id = control.launch(LaunchAsk(source=body.source, path=body.path, resume_run_id=body.resume_run_id))
    finally:
        cache.clear()  # the new run is ours: `owned` changes without the files changing
    return LaunchedOut(run_id=run_id)


@router.post("/runs/{run_id}/cancel", status_code=202)
def cancel_run(run_id: RunId, control: ControlDep, cache: CacheDep) -> CancelledOut:
    control.cancel(run_id)
    cache.clear()
    return CancelledOut(run_id=run_id)


@router.get("/runs/{run_id}/log")
def run_log(run_id: RunId, control: ControlDep) -> RunLogOut:
    return RunLogOut(run_id=run_id, lines=control.log(run_id))
