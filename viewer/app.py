"""`create_app(settings)`: builds the FastAPI app and its collaborators, and wraps it in the security guard.

Nothing is built at import time; `launcher_for(settings)` is where each `GMAIL_STATS_LAUNCHER` value plugs in.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from shared.accounts import account_file
from shared.errors import UsageError
from shared.timeutil import Clock, system_clock
from viewer.launch.control import RunControl
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command
from viewer.launch.launcher import Launcher, LaunchError
from viewer.launch.refresh import Refresher
from viewer.query.database import Database
from viewer.query.hidden import HiddenSets
from viewer.settings import ViewerSettings
from viewer.web import account_api, api, estimates_api, export, gmail_api, run_api
from viewer.web.deps import Accounts, ViewerState
from viewer.web.handlers import install_error_handlers
from viewer.web.schemas import ERROR_RESPONSES
from viewer.web.security import SecurityGuard
from viewer.web.status import RateTracker

STATIC_DIR = Path(__file__).parent / "static"
OPENAPI_URL = "/api/openapi.json"


def _version() -> str:
    try:
        return metadata.version("gmail-stats")
    except metadata.PackageNotFoundError:
        return "0"


def launcher_for(settings: ViewerSettings) -> Launcher:
    """Maps `GMAIL_STATS_LAUNCHER` to a launcher; the Docker SDK is imported lazily."""
    if settings.launcher == "docker":
        try:
            from viewer.launch.runner_launcher import DockerLauncher
        except ImportError as exc:
            raise UsageError(f"GMAIL_STATS_LAUNCHER=docker is not available here ({exc})") from exc
        try:
            return DockerLauncher.from_runners_file()
        except LaunchError as exc:
            raise UsageError(f"GMAIL_STATS_LAUNCHER=docker: {exc}; {exc.hint}") from exc
    command = [str(settings.ingest_bin)] if settings.ingest_bin is not None else default_ingest_command()
    return ProcessLauncher(ingest_command=command, db_path=settings.db, import_dir=settings.import_dir)


def create_app(
    settings: ViewerSettings, *, launcher: Launcher | None = None, clock: Clock = system_clock
) -> SecurityGuard:
    """The whole viewer as an ASGI app; `launcher` defaults to the one `settings.launcher` names."""
    chosen = launcher if launcher is not None else launcher_for(settings)
    csrf_token = secrets.token_hex(32)  # 32 random bytes, new for every viewer process
    hidden = HiddenSets()
    serving = threading.Event()

    def build(account: str) -> ViewerState:
        """One account's collaborators: its database (with its one cache), run control (and lock) and rates."""
        mine = settings.model_copy(update={"db": account_file(settings.db, account)})
        database = Database(mine.db)
        control = RunControl(settings=mine, database=database, launcher=chosen, account=account, base_db=settings.db)
        if serving.is_set():  # an account seen after start; the first ones adopt when the app starts
            control.adopt()
        return ViewerState(
            account=account,
            settings=mine,
            database=database,
            control=control,
            clock=clock,
            rates=RateTracker(clock),
            csrf_token=csrf_token,
            hidden=hidden,
        )

    accounts = Accounts(base_db=settings.db, build=build)
    refresher = Refresher(
        controls=lambda: [accounts.get(name).control for name in accounts.names()],
        clock=clock,
        every_seconds=settings.refresh_check_seconds,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for name in accounts.names():
            accounts.get(name)
        for state in accounts.built():
            state.control.adopt()
        serving.set()
        refresher.start()
        try:
            yield
        finally:
            refresher.stop()
            for state in accounts.built():
                state.database.close()
            chosen.close()

    app = FastAPI(
        title="gmail-stats viewer",
        version=_version(),
        lifespan=lifespan,
        # The machine-readable contract only: the interactive docs pages need inline scripts the CSP refuses.
        docs_url=None,
        redoc_url=None,
        openapi_url=OPENAPI_URL,
        responses=ERROR_RESPONSES,  # every route may answer with the error shape
        # No telemetry (README, privacy): FastAPI's own OpenTelemetry spans, metrics and logs, whose URLs carry the
        # searches, stay off even when the environment asks for them (FASTAPI_OTEL_AUTO_CONFIGURE, a global provider).
        telemetry={
            "tracing": False,
            "metrics": False,
            "logs": False,
            "operation_spans": False,
            "auto_configure": False,
        },
    )
    app.state.accounts = accounts
    app.state.refresher = refresher
    install_error_handlers(app, style=settings.command_style, db=str(settings.db.absolute()))
    for routes in (api, export, run_api, gmail_api, estimates_api, account_api):
        app.include_router(routes.router)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return SecurityGuard(app, csrf_token=csrf_token, allowed_hosts=settings.allowed_hosts)
