"""HTTP errors: one `ApiError` type and the `{"error": kind, "message": text}` body, raised by every room.

The translation of SQLite's exceptions (and of unreadable rows) into `ApiError` happens here and nowhere else. No
FastAPI here: the handlers that turn these into responses are `viewer.web.handlers`.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from sqlalchemy.exc import DBAPIError

from shared.errors import ErrorKind, GmailStatsError

log = logging.getLogger("viewer")

# SQLite result codes that mean "try again in a moment", never "your database is broken": every BUSY and LOCKED
# code, and the read-only ones of a WAL index being recovered or set up (matched as prefixes of the code's name).
_TRANSIENT_CODES = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_PROTOCOL",
    "SQLITE_READONLY_RECOVERY",
    "SQLITE_READONLY_CANTINIT",
    "SQLITE_READONLY_CANTLOCK",
)


class ApiError(GmailStatsError):
    """An HTTP error with a stable `kind`; the body is always `{"error": kind, "message": text}` (plus `extra`)."""

    def __init__(self, status: int, kind: ErrorKind, message: str, **extra: Any) -> None:
        super().__init__(message, kind=kind)
        self.status = status
        self.extra = extra


# Stands in messages for the command that lists runs; the handler writes the person's form (`runs_command`).
RUNS_COMMAND = "{runs}"
INTERNAL_MESSAGE = "the viewer hit an unexpected error; see its log"


def error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": kind, "message": message, **extra}


def from_database_error(exc: BaseException) -> ApiError:
    """Maps a driver exception to 503 `busy` (retry) or 503 `db_unreadable`; never shows SQL or paths."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    name = getattr(orig, "sqlite_errorname", "") if isinstance(orig, sqlite3.Error) else ""
    text = str(orig).lower()
    if name.startswith(_TRANSIENT_CODES) or "locked" in text or "busy" in text:
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
