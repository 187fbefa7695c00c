"""The run routes: status (polled by every open page), run history and logs, the import folder, launch and cancel.

Reads go through `Database`; launching and cancelling are `RunControl`'s. The data routes are in `viewer.web.api`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response
from sqlalchemy import Connection
from starlette.concurrency import run_in_threadpool

from shared.accounts import DEFAULT_ACCOUNT
from shared.errors import RETRY_WARNING_PREFIX
from shared.lock import is_lock_held
from shared.resume import import_command, runs_command, scan_command
from shared.runs import Run, list_runs, open_run
from shared.schema.models import RunState
from viewer.errors import from_bad_contents
from viewer.launch.control import RunControl, stopped_unexpectedly, unfetched_by_run
from viewer.launch.imports import list_mbox_files, relative_to_import_dir
from viewer.query import queries
from viewer.query.database import Database
from viewer.query.queries import DbState, Generation
from viewer.web.answers import Read, generation_headers
from viewer.web.deps import StateDep, ViewerState
from viewer.web.schemas import (
    MAX_ID,
    CancelledOut,
    ConsentBody,
    ConsentOut,
    ErrorOut,
    ImportFileOut,
    ImportsOut,
    LaunchBody,
    LaunchedOut,
    RunLogOut,
    RunOut,
    RunsOut,
    StatusOut,
)

router = APIRouter(prefix="/api")
_SPAWN_FAILED: dict[int | str, dict[str, Any]] = {
    500: {"model": ErrorOut, "description": "the ingester could not be started (`spawn_failed`, with a `hint`)"},
}

RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="a run id from /api/runs")]


def _run_out(run: Run, control: RunControl, *, lock_held: bool, unfetched: dict[int, int]) -> RunOut:
    """The public shape of a run: no PID (the page never signals), the import file relative to the folder, and
    the derived facts of `viewer.launch.control` (whether it really still runs, what a partial scan left out)."""
    data = run.public_dict()
    del data["pid"]
    if run.mbox_path is not None:
        inside = relative_to_import_dir(control.settings, run.mbox_path)
        data["mbox_path"] = inside if inside is not None else FsPath(run.mbox_path).name
    # Asked of the launcher only for an open row without the lock: a rare case, so no engine call per poll.
    runner_alive = run.is_open and not lock_held and control.runner_alive(run)
    return RunOut(
        **data,
        owned=control.owns(run) is not None,
        stopped_unexpectedly=stopped_unexpectedly(run, lock_held=lock_held, runner_alive=runner_alive),
        unfetched=unfetched.get(run.run_id, 0),
    )


def is_retrying(state: str, warnings_tail: list[str]) -> bool:
    """A running run whose latest warning is a retry (the ingester writes them with `RETRY_WARNING_PREFIX`)."""
    return state == RunState.RUNNING and bool(warnings_tail) and warnings_tail[-1].startswith(RETRY_WARNING_PREFIX)


@dataclass(frozen=True, slots=True)
class _RunFacts:
    """What `/api/status` reads from one snapshot: kept per generation, so a poll between commits reads two rows."""

    state: DbState
    open_run: Run | None
    recent: list[Run]
    unfetched: dict[int, int]
    mixed_sources: bool
    unrepaired_count: int


def _run_facts(database: Database) -> tuple[_RunFacts, Generation | None]:
    if not database.exists():
        return _RunFacts(DbState.MISSING, None, [], {}, False, 0), None
    with database.connect() as conn:
        snap = database.snapshot(conn, with_totals=False)
        mix = snap.mix
        if mix is None:  # a schema this code does not read: no run rows, and no generation to keep facts under
            return _RunFacts(snap.state, None, [], {}, False, 0), None

        def read() -> _RunFacts:
            runs = open_run(conn), list_runs(conn, limit=2), unfetched_by_run(conn)
            return _RunFacts(snap.state, *runs, mix.mixed_sources, mix.unrepaired_count)

        return database.cache.get(snap.generation, "status", read), snap.generation


@router.get("/status", response_model=StatusOut)
async def status(state: StateDep) -> Response:
    """Polled by every open page: the database's part is read once per generation; the lock, the launcher's part
    and the rate are this poll's own."""
    if state.control.reap_due():
        await run_in_threadpool(state.control.reap)
    lock_held = is_lock_held(state.settings.db)
    # The rate, the ETA and `owned` are this viewer's own: recomputed at most once a second, and at each commit.
    key = ("status", lock_held, int(time.monotonic()))
    head, generation = await run_in_threadpool(_status_head, state, key)
    body = head + b',"now_unix":%d}' % int(state.clock())
    return Response(body, media_type="application/json", headers=generation_headers(generation))


def _status_head(state: ViewerState, key: tuple[str, bool, int]) -> Read:
    """The status document without its closing `now_unix`, kept in the one cache under the generation it read."""
    facts, generation = _run_facts(state.database)
    head = state.database.cache.get(generation, key, lambda: _status(state, facts, lock_held=key[1]))
    return head, generation


def _status(state: ViewerState, facts: _RunFacts, *, lock_held: bool) -> bytes:
    control = state.control
    # An open row without the lock belongs to a dead ingester: it is history, not activity.
    active = facts.open_run if lock_held else None
    last = next((run for run in facts.recent if active is None or run.run_id != active.run_id), None)
    try:
        active_out, last_out = (
            _run_out(run, control, lock_held=lock_held, unfetched=facts.unfetched) if run is not None else None
            for run in (active, last)
        )
    except (ValueError, TypeError, KeyError) as exc:  # a malformed row is a 503 `db_unreadable`, not a 500
        raise from_bad_contents(exc) from exc
    progress = state.rates.observe(active)
    document = StatusOut(
        db=str(facts.state),
        ingest_lock_held=lock_held,
        active_run=active_out,
        last_run=last_out,
        owns_active_run=control.owns(active) is not None,
        mixed_sources=facts.mixed_sources,
        unrepaired_count=facts.unrepaired_count,
        rate_per_sec=progress.rate_per_sec,
        eta_seconds=progress.eta_seconds,
        retrying=active_out is not None and is_retrying(active_out.state, active_out.warnings_tail),
        csrf_token=state.csrf_token,
        now_unix=0,
    )
    return document.model_dump_json(exclude={"now_unix"}).encode()[:-1]


@router.get("/runs")
def runs(state: StateDep, response: Response, limit: Annotated[int, Query(ge=1, le=100)] = 20) -> RunsOut:
    control = state.control
    lock_held = is_lock_held(control.settings.db)

    def read(conn: Connection) -> list[RunOut]:
        response.headers.update(generation_headers(queries.generation(conn)))
        unfetched = unfetched_by_run(conn)
        return [
            _run_out(run, control, lock_held=lock_held, unfetched=unfetched) for run in list_runs(conn, limit=limit)
        ]

    return RunsOut(runs=state.database.read_ready(read) or [], now_unix=int(state.clock()))


@router.get("/imports")
def imports(state: StateDep) -> ImportsOut:
    settings = state.settings
    shown = settings.host_import_dir or str(settings.import_dir)  # as the person knows it: under Docker, the host's
    style = settings.command_style
    db = str(state.control.base_db.absolute())  # the viewer's own folder: a pasted command fills this page
    account = None if state.account == DEFAULT_ACCOUNT else state.account
    files: list[ImportFileOut] = []
    unreadable: list[str] = []
    for f in list_mbox_files(settings.import_dir):
        # A name that is not UTF-8 reaches us with its stray bytes as lone surrogates (`os.walk`, PEP 383), which
        # no JSON answer can carry and no request could name back: it is listed apart, as `\xff` escapes, to rename.
        escaped = f.path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        if escaped != f.path:
            unreadable.append(escaped)
            continue
        command = import_command(path=f"{shown.rstrip('/')}/{f.path}", style=style, db=db, account=account)
        files.append(ImportFileOut(**asdict(f), command=command))
    return ImportsOut(
        import_dir=shown,
        import_dir_exists=settings.import_dir.is_dir(),
        files=files,
        unreadable_names=unreadable,
        import_command=import_command(path="path/to/file.mbox", style=style, db=db, account=account),
        scan_command=scan_command(style, db, account),
        runs_command=runs_command(style, db, account),
    )


@router.post("/runs", status_code=202, responses=_SPAWN_FAILED)
def start_run(body: LaunchBody, state: StateDep) -> LaunchedOut:
    run_id = state.control.launch(source=body.source, path=body.path, resume_run_id=body.resume_run_id)
    return LaunchedOut(run_id=run_id)


@router.post("/runs/{run_id}/cancel", status_code=202)
def cancel_run(run_id: RunId, state: StateDep) -> CancelledOut:
    state.control.cancel(run_id)
    return CancelledOut(run_id=run_id)


@router.post("/runs/{run_id}/consent", status_code=202)
def paste_consent(run_id: RunId, body: ConsentBody, state: StateDep) -> ConsentOut:
    """The address a browser on another machine ended on, handed to the waiting scan's own consent listener."""
    state.control.paste_consent(run_id, body.address)
    return ConsentOut(run_id=run_id)


@router.get("/runs/{run_id}/log")
def run_log(run_id: RunId, state: StateDep) -> RunLogOut:
    return RunLogOut(run_id=run_id, lines=state.control.log(run_id))
