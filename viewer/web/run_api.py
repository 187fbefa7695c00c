"""The run routes: status (polled by every open page), run history and logs, the import folder, launch and cancel.

Reads go through `Database`; launching and cancelling are `RunControl`'s. The data routes are in `viewer.web.api`.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from shared.accounts import DEFAULT_ACCOUNT
from shared.errors import RETRY_WARNING_PREFIX
from shared.lock import is_lock_held
from shared.resume import import_command, runs_command, scan_command
from shared.runs import Run, list_runs, open_run
from shared.schema.models import RunState
from viewer.launch.control import LaunchAsk, RunControl
from viewer.launch.imports import list_mbox_files, relative_to_import_dir
from viewer.launch.run_truth import stopped_unexpectedly, unfetched_by_run
from viewer.query.queries import DbState
from viewer.web.cached import answer
from viewer.web.deps import CacheDep, ClockDep, ControlDep, DatabaseDep, StateDep
from viewer.web.schemas import (
    ERROR_RESPONSES,
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

_LAUNCH_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    500: {"model": ErrorOut, "description": "the ingester could not be started (`spawn_failed`, with a `hint`)"},
}
router = APIRouter(prefix="/api", responses=ERROR_RESPONSES)

RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="a run id from /api/runs")]


def _run_out(run: Run, control: RunControl, *, lock_held: bool, unfetched: dict[int, int]) -> RunOut:
    """The public shape of a run: no PID (the page never signals), the import file relative to the folder, and
    the derived facts of `viewer.launch.run_truth` (whether it really still runs, what a partial scan left out)."""
    data = run.public_dict()
    del data["pid"]
    if run.mbox_path is not None:
        inside = relative_to_import_dir(
            control.settings.import_dir, run.mbox_path, host_dir=control.settings.host_import_dir
        )
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


@router.get("/status", response_model=StatusOut)
async def status(state: StateDep) -> Response:
    """Polled by every open page: a fresh cached answer is served on the event loop (no thread hop, no wait for
    the GIL); only a miss reads the database, in the threadpool."""
    database, control, settings, cache = state.database, state.control, state.settings, state.cache
    clock, rates, csrf_token, index = state.clock, state.rates, state.csrf_token, state.index
    if control.reap_due():
        await run_in_threadpool(control.reap)
    lock_held = is_lock_held(settings.db)

    def compute() -> bytes:
        index.get()  # at most once a second per change: reads the senders into memory once the file settles
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
                    unfetched = unfetched_by_run(conn)
                    # Built inside the block: a malformed row is a 503 `db_unreadable`, not a 500.
                    active_out = last_out = None
                    if active is not None:
                        active_out = _run_out(active, control, lock_held=lock_held, unfetched=unfetched)
                    if last is not None:
                        last_out = _run_out(last, control, lock_held=lock_held, unfetched=unfetched)
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

    head: bytes = await answer(cache, "status", (database.change_key(), lock_held), compute)
    return Response(head + b',"now_unix":%d}' % int(clock()), media_type="application/json")


@router.get("/runs")
def runs(
    database: DatabaseDep, control: ControlDep, clock: ClockDep, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> RunsOut:
    out: list[RunOut] = []
    lock_held = is_lock_held(control.settings.db)
    if database.exists():
        with database.connect() as conn:
            if database.schema_ready(conn):
                unfetched = unfetched_by_run(conn)
                out = [
                    _run_out(run, control, lock_held=lock_held, unfetched=unfetched)
                    for run in list_runs(conn, limit=limit)
                ]
    return RunsOut(runs=out, now_unix=int(clock()))


def _escaped_if_not_utf8(path: str) -> str | None:
    """None for a path that is UTF-8 text; else the name with its stray bytes as `\\xff` escapes, for a note.

    `os.walk` hands such bytes over as lone surrogates (PEP 383), which no JSON answer can carry, and no request
    could name the file back: it is listed apart, to be renamed.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


@router.get("/imports")
def imports(state: StateDep) -> ImportsOut:
    settings = state.settings
    shown, style = settings.shown_import_dir(), settings.command_style
    db = str(state.control.base_db.absolute())  # the viewer's own folder: a pasted command fills this page
    account = None if state.account == DEFAULT_ACCOUNT else state.account
    files: list[ImportFileOut] = []
    unreadable: list[str] = []
    for f in list_mbox_files(settings.import_dir):
        if (escaped := _escaped_if_not_utf8(f.path)) is not None:
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


@router.post("/runs/{run_id}/consent", status_code=202)
def paste_consent(run_id: RunId, body: ConsentBody, control: ControlDep, cache: CacheDep) -> ConsentOut:
    """The address a browser on another machine ended on, handed to the waiting scan's own consent listener."""
    control.paste_consent(run_id, body.address)
    cache.clear()
    return ConsentOut(run_id=run_id)


@router.get("/runs/{run_id}/log")
def run_log(run_id: RunId, control: ControlDep) -> RunLogOut:
    return RunLogOut(run_id=run_id, lines=control.log(run_id))
