"""The JSON API routes: thin, each reads through `Database`/`queries` or delegates to `RunControl`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse

from shared.lock import is_lock_held
from shared.runs import Run, list_runs, open_run
from shared.summary import SENDER_COLUMNS, SenderRow, all_senders, summary_document
from shared.timeutil import Clock
from viewer import queries
from viewer.cache import ResponseCache
from viewer.control import LaunchAsk, RunControl
from viewer.database import Database
from viewer.imports import list_mbox_files
from viewer.queries import DbState, SortKey, SortOrder
from viewer.schemas import LaunchBody
from viewer.settings import ViewerSettings
from viewer.status import RateTracker

router = APIRouter(prefix="/api")

# The dependencies are `async` on purpose: they only read `app.state`, and a sync one would cost a threadpool hop.


async def _database(request: Request) -> Database:
    return request.app.state.database  # type: ignore[no-any-return]


async def _control(request: Request) -> RunControl:
    return request.app.state.control  # type: ignore[no-any-return]


async def _settings(request: Request) -> ViewerSettings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def _clock(request: Request) -> Clock:
    return request.app.state.clock  # type: ignore[no-any-return]


async def _rates(request: Request) -> RateTracker:
    return request.app.state.rates  # type: ignore[no-any-return]


async def _cache(request: Request) -> ResponseCache:
    return request.app.state.cache  # type: ignore[no-any-return]


async def _csrf_token(request: Request) -> str:
    return request.app.state.csrf_token  # type: ignore[no-any-return]


DatabaseDep = Annotated[Database, Depends(_database)]
ControlDep = Annotated[RunControl, Depends(_control)]
SettingsDep = Annotated[ViewerSettings, Depends(_settings)]
ClockDep = Annotated[Clock, Depends(_clock)]
RatesDep = Annotated[RateTracker, Depends(_rates)]
CsrfDep = Annotated[str, Depends(_csrf_token)]
CacheDep = Annotated[ResponseCache, Depends(_cache)]


def _json_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def _run_json(run: Run | None, control: RunControl) -> dict[str, Any] | None:
    if run is None:
        return None
    return {**run.public_dict(), "owned": control.owns(run) is not None}


@router.get("/summary")
def summary(database: DatabaseDep, clock: ClockDep) -> dict[str, Any]:
    senders: list[SenderRow] = []
    if database.exists():
        with database.connect() as conn:
            if database.require_ready(conn).state is DbState.READY:
                senders = all_senders(conn)
    return summary_document(senders, now=clock())


@router.get("/senders")
def senders(
    database: DatabaseDep,
    clock: ClockDep,
    q: Annotated[str, Query(max_length=200)] = "",
    sort: SortKey = SortKey.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    *,
    cache: CacheDep,
) -> Response:
    key = ("senders", q, sort, order, offset, limit)

    def compute() -> bytes:
        return _json_bytes(_senders(database, clock, q, sort, order, offset, limit))

    # Polled: the cached answer is the serialised body, so a hit costs no encoding at all.
    return Response(cache.get(key, database.change_key(), compute), media_type="application/json")


def _senders(
    database: Database, clock: Clock, q: str, sort: SortKey, order: SortOrder, offset: int, limit: int
) -> dict[str, Any]:
    body: dict[str, Any] = {"total": 0, "senders": [], "total_messages": 0, "total_senders": 0, "top_sender": None}
    if database.exists():
        with database.connect() as conn:
            snap = database.require_ready(conn)
            if snap.totals is not None and snap.state is DbState.READY:
                page = queries.senders_page(
                    conn, q=q.strip(), sort=sort, order=order, offset=offset, limit=limit, total=snap.totals.senders
                )
                top = snap.totals.top_sender
                body = {
                    "total": page.total,
                    "senders": [asdict(s) for s in page.senders],
                    "total_messages": snap.totals.messages,
                    "total_senders": snap.totals.senders,
                    "top_sender": asdict(top) if top is not None else None,
                }
    return {**body, "generated_at_unix": int(clock())}


@router.get("/export.csv")
def export_csv(database: DatabaseDep) -> StreamingResponse:
    if database.exists():
        with database.connect() as conn:
            ready = database.require_ready(conn).state is DbState.READY
    else:
        ready = False

    def rows() -> Iterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(SENDER_COLUMNS)
        if ready:
            with database.connect() as conn:
                for sender in queries.iter_all_senders(conn):
                    writer.writerow(asdict(sender).values())
                    if buffer.tell() > 64 * 1024:
                        yield buffer.getvalue()
                        buffer.seek(0)
                        buffer.truncate()
        yield buffer.getvalue()

    return StreamingResponse(
        rows(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="gmail-stats-senders.csv"'},
    )


@router.get("/status")
def status(
    database: DatabaseDep,
    control: ControlDep,
    settings: SettingsDep,
    clock: ClockDep,
    rates: RatesDep,
    csrf_token: CsrfDep,
    cache: CacheDep,
) -> Response:
    control.reap()
    lock_held = is_lock_held(settings.db)

    def compute() -> dict[str, Any]:
        state = DbState.MISSING
        active = last = None
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
                if snap.mix is not None:
                    mixed, unrepaired = snap.mix.mixed_sources, snap.mix.unrepaired_count
        progress = rates.observe(active)
        return {
            "db": str(state),
            "ingest_lock_held": lock_held,
            "active_run": _run_json(active, control),
            "last_run": _run_json(last, control),
            "owns_active_run": control.owns(active) is not None,
            "mixed_sources": mixed,
            "unrepaired_count": unrepaired,
            "rate_per_sec": progress.rate_per_sec,
            "eta_seconds": progress.eta_seconds,
            "csrf_token": csrf_token,
        }

    document = cache.get("status", (database.change_key(), lock_held), compute)
    return Response(_json_bytes({**document, "now_unix": int(clock())}), media_type="application/json")


@router.get("/runs")
def runs(
    database: DatabaseDep, control: ControlDep, clock: ClockDep, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> dict[str, Any]:
    found: list[Run] = []
    if database.exists():
        with database.connect() as conn:
            if database.schema_ready(conn):
                found = list_runs(conn, limit=limit)
    return {"runs": [_run_json(run, control) for run in found], "now_unix": int(clock())}


@router.get("/imports")
def imports(settings: SettingsDep) -> dict[str, Any]:
    files = list_mbox_files(settings.import_dir)
    # `import_dir_exists` lets the page say "create the folder" instead of "no file yet".
    return {
        "import_dir": str(settings.import_dir),
        "import_dir_exists": settings.import_dir.is_dir(),
        "files": [asdict(f) for f in files],
    }


@router.post("/runs", status_code=202)
def start_run(body: LaunchBody, control: ControlDep, cache: CacheDep) -> dict[str, Any]:
    cache.clear()
    try:
        run_id = control.launch(LaunchAsk(source=body.source, path=body.path, resume_run_id=body.resume_run_id))
    finally:
        cache.clear()  # the new run is ours: `owned` changes without the files changing
    return {"run_id": run_id}


@router.post("/runs/{run_id}/cancel", status_code=202)
def cancel_run(run_id: int, control: ControlDep, cache: CacheDep) -> dict[str, Any]:
    control.cancel(run_id)
    cache.clear()
    return {"run_id": run_id}


@router.get("/runs/{run_id}/log")
def run_log(run_id: int, control: ControlDep) -> dict[str, Any]:
    return {"run_id": run_id, "lines": control.log(run_id)}
