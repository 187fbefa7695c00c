"""SQLite failures as one sentence that says what to do: the one translation of a database's own errors.

Both the ingester's writer and the reading commands (`runs`, `export`) raise what `database_error` builds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from shared.errors import DatabaseError


def database_error(path: Path, exc: BaseException) -> DatabaseError:
    """The `DatabaseError` for `exc` (a `sqlite3` or SQLAlchemy database error) raised on the database `path`."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    text = str(orig)
    code = getattr(orig, "sqlite_errorname", "")
    if "readonly" in text or code.startswith("SQLITE_READONLY"):
        return DatabaseError(f"the database {path} is read-only; make it writable, or choose another --db")
    if code in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in text or "malformed" in text:
        return DatabaseError(
            f"{path} is not a gmail-stats database or is damaged ({text}); choose another --db, or move it away "
            "to start afresh"
        )
    if code == "SQLITE_FULL":
        return DatabaseError(f"the disk holding {path} is full; free some space, then resume")
    if code == "SQLITE_CANTOPEN" or "unable to open" in text:
        return DatabaseError(f"cannot open the database {path} ({text}); check the file and its folder can be read")
    if code == "SQLITE_BUSY" or "locked" in text:
        return DatabaseError(f"the database {path} is busy (another program holds it); try again in a moment")
    return DatabaseError(f"database error on {path}: {text}")


# Everything a database operation may raise that `database_error` translates.
SQLITE_FAILURES = (DBAPIError, sqlite3.Error)
