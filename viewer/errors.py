"""HTTP errors: one `ApiError` type, the `{"error": kind, "message": text}` body, and the handlers that use it.

The translation of SQLite's exceptions (and of unreadable rows) into `ApiError` happens here and nowhere else.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.errors import ErrorKind, GmailStatsError
from shared.resume import CommandStyle, runs_command

log = logging.getLogger("viewer")

# SQLite result codes that mean "try again in a moment", never "your database is broken".
_TRANSIENT_CODES = frozenset(
    {
        "SQLITE_BUSY",
        "SQLITE_BUSY_RECOVERY",
        "SQLITE_BUSY_SNAPSHOT",
        "SQLITE_BUSY_TIMEOUT",
        "SQLITE_LOCKED",
        "SQLITE_LOCKED_SHAREDCACHE",
        "SQLITE_PROTOCOL",
        "SQLITE_READONLY_RECOVERY",
        "SQLITE_READONLY_CANTINIT",
        "SQLITE_READONLY_CANTLOCK",
    }
)
_STATUS_KINDS = {
    404: (ErrorKind.NOT_FOUND, "no such page or API route"),
    405: (ErrorKind.METHOD_NOT_ALLOWED, "this route does not accept that method"),
}


class ApiError(GmailStatsError):
    """An HTTP error with a stable `kind`; the body is always `{"error": kind, "message": text}` (plus `extra`)."""

    def __init__(self, status: int, kind: ErrorKind, message: str, **extra: Any) -> None:
        super().__init__(message, kind=kind)
        self.status = status
        self.extra = extra


# Stands in messages for the command that lists runs; the handler writes the person's form (`runs_command`).
RUNS_COMMAND = "{runs}"


def error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": kind, "message": message, **extra}


def from_database_error(exc: BaseException) -> ApiError:
    """Maps a driver exception to 503 `busy` (retry) or 503 `db_unreadable`; never shows SQL or paths."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    name = getattr(orig, "sqlite_errorname", "") if isinstance(orig, sqlite3.Error) else ""
    text = str(orig).lower()
    if name in _TRANSIENT_CODES or "locked" in text or "busy" in text:
        return ApiError(503, ErrorKind.BUSY, "the database is busy (an ingester is writing); retrying shortly")
    if name.startswith("SQLITE_CANTOPEN"):
        return ApiError(503, ErrorKind.BUSY, "the database could not be opened just now; retrying shortly")
    return ApiError(503, ErrorKind.DB_UNREADABLE, f"the database could not be read; run `{RUNS_COMMAND}` in a terminal")


def from_bad_contents(exc: Exception) -> ApiError:
    """A row the viewer cannot turn into its answer (bad JSON, a wrong type, a missing column) is a 503 too."""
    log.warning("unreadable database contents: %r", exc)
    return ApiError(
        503,
        ErrorKind.DB_UNREADABLE,
        f"the database holds data the viewer cannot read; run `{RUNS_COMMAND}` in a terminal",
    )


def install_error_handlers(app: FastAPI, *, style: CommandStyle, db: str | None = None) -> None:
    """Every error answer has the one shape; commands in messages are the person's own (`make …` under Docker,
    else naming the viewer's database `db`)."""
    runs = runs_command(style, db)

    async def on_api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        message = exc.message.replace(RUNS_COMMAND, runs)
        return JSONResponse(error_body(exc.kind, message, **exc.extra), status_code=exc.status)

    async def on_http_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        kind, message = _STATUS_KINDS.get(exc.status_code, (ErrorKind.HTTP_ERROR, str(exc.detail)))
        return JSONResponse(error_body(kind, message), status_code=exc.status_code, headers=exc.headers)

    async def on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        if tuple(first.get("loc", ())) == ("body", "source"):
            # The same kind the page has always seen for an unknown source, now that the schema lists them.
            return JSONResponse(
                error_body(ErrorKind.BAD_SOURCE, "source must be `mbox` or `gmail_api`"), status_code=422
            )
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        message = f"{where}: {first.get('msg', 'invalid value')}" if where else str(first.get("msg", "invalid request"))
        return JSONResponse(error_body(ErrorKind.BAD_REQUEST, message), status_code=422)

    async def on_crash(_request: Request, exc: Exception) -> JSONResponse:
        # Starlette's ServerErrorMiddleware calls this for anything unhandled, then re-raises for the server log.
        log.error("unhandled error: %r", exc)
        return JSONResponse(
            error_body(ErrorKind.INTERNAL, "the viewer hit an unexpected error; see its log"), status_code=500
        )

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(Exception, on_crash)
