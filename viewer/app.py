"""`create_app(settings)`: builds the FastAPI app and its collaborators, and wraps it in the security guard.

Nothing is built at import time; `launcher_for(settings)` is where each `GMAIL_STATS_LAUNCHER` value plugs in.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Protocol, runtime_checkable

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from shared.errors import UsageError
from shared.timeutil import Clock, system_clock
from viewer.launch.control import RunControl
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command
from viewer.launch.launcher import Launcher, LaunchError
from viewer.query.cache import ResponseCache
from viewer.query.database import Database
from viewer.query.hidden import HiddenSets
from viewer.query.index_keeper import IndexKeeper
from viewer.query.sender_index import build as build_index
from viewer.settings import ViewerSettings
from viewer.web import api, domain_export, gmail_api, run_api
from viewer.web.deps import ViewerState
from viewer.web.handlers import install_error_handlers
from viewer.web.security import SecurityGuard
from viewer.web.status import RateTracker

STATIC_DIR = Path(__file__).parent / "static"
OPENAPI_URL = "/api/openapi.json"
POLL_CACHE_SECONDS = 1.0


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


def _version() -> str:
    try:
        return metadata.version("gmail-stats")
    except metadata.PackageNotFoundError:
        return "0"


def launcher_for(settings: ViewerSettings) -> Launcher:
    """Maps `GMAIL_STATS_LAUNCHER` to a launcher; `docker` is imported lazily (the only Docker SDK user)."""
    if settings.launcher == "docker":
        try:
            from viewer.launch.launch_docker import DockerLauncher
        except ImportError as exc:
            raise UsageError(f"GMAIL_STATS_LAUNCHER=docker is not available here ({exc})") from exc
        try:
            return DockerLauncher.from_settings(settings)
        except LaunchError as exc:
            raise UsageError(f"GMAIL_STATS_LAUNCHER=docker: {exc}; {exc.hint}") from exc
    command = [str(settings.ingest_bin)] if settings.ingest_bin is not None else default_ingest_command()
    return ProcessLauncher(ingest_command=command, db_path=settings.db, import_dir=settings.import_dir)


def create_app(
    settings: ViewerSettings, *, launcher: Launcher | None = None, clock: Clock = system_clock
) -> SecurityGuard:
    """The whole viewer as an ASGI app; `launcher` defaults to the one `settings.launcher` names."""
    chosen = launcher if launcher is not None else launcher_for(settings)
    database = Database(settings.db)
    kept_index = IndexKeeper(
        change_key=database.change_key,
        connect=database.connect,
        is_ready=database.schema_ready,
        build=build_index,
        enabled=settings.sender_index,
    )
    control = RunControl(settings=settings, database=database, launcher=chosen)
    csrf_token = secrets.token_hex(32)  # 32 random bytes, new for every viewer process

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        control.adopt()
        kept_index.get()  # a database that is not being written is read into memory from the start
        try:
            yield
        finally:
            kept_index.close()
            database.engine.dispose()
            database.fallback_engine.dispose()
            if isinstance(chosen, _Closable):
                chosen.close()

    app = FastAPI(
        title="gmail-stats viewer",
        version=_version(),
        lifespan=lifespan,
        # The machine-readable contract only: the interactive docs pages need inline scripts the CSP refuses.
        docs_url=None,
        redoc_url=None,
        openapi_url=OPENAPI_URL,
    )
    app.state.viewer = ViewerState(
        settings=settings,
        database=database,
        control=control,
        clock=clock,
        rates=RateTracker(clock),
        csrf_token=csrf_token,
        # Polled answers are shared for up to a second while the database files are unchanged.
        cache=ResponseCache(ttl=POLL_CACHE_SECONDS),
        hidden=HiddenSets(),
        index=kept_index,
    )
    install_error_handlers(app, style=settings.command_style, db=str(settings.db.absolute()))
    app.include_router(api.router)
    app.include_router(domain_export.router)
    app.include_router(run_api.router)
    app.include_router(gmail_api.router)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return SecurityGuard(app, csrf_token=csrf_token, allowed_hosts=settings.allowed_hosts)
