"""The viewer's read-only access to the database: one read transaction per connection, SQLite errors mapped to
`ApiError`, and the one cache (`viewer.query.cache`) keyed on the generation that transaction saw."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from shared.db import reader_engine
from shared.errors import ErrorKind
from viewer.errors import ApiError, from_bad_contents, from_database_error
from viewer.query import queries
from viewer.query.cache import SnapshotCache
from viewer.query.queries import DbState, Generation, SourceMix, Totals

_OPEN_PATIENCE_SECONDS = 0.3
_PROBE = "SELECT 1 FROM sqlite_master LIMIT 1"
_OPEN_RETRY_SECONDS = 0.02
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What every page needs besides the rows: the database state and the whole-table facts."""

    state: DbState
    totals: Totals | None
    mix: SourceMix | None
    generation: Generation | None  # what answers read on this connection are cached under (None: not cached)


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        # Strictly read-only first; the plain `mode=ro` engine only when the sidecars are missing (see `_open`).
        self.engine: Engine = reader_engine(path, readonly_shm=True)
        self.fallback_engine: Engine = reader_engine(path)
        self.cache = SnapshotCache()

    def close(self) -> None:
        """Closes both engines' pooled connections (the app's shutdown)."""
        self.engine.dispose()
        self.fallback_engine.dispose()

    def exists(self) -> bool:
        return self.path.is_file()

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A short read-only connection; driver errors and unreadable rows leave as `ApiError(503, ...)`.

        Callers build their answers (pydantic models, CSV) inside the block, so a malformed value stored in the
        database is a 503 `db_unreadable` here, never a 500 in a route.
        """
        try:
            with self._open() as conn:
                yield conn
        except (DBAPIError, sqlite3.Error) as exc:
            raise from_database_error(exc) from exc
        except (ValueError, TypeError, KeyError) as exc:  # json, pydantic and dataclass construction from rows
            raise from_bad_contents(exc) from exc

    @contextmanager
    def _open(self) -> Iterator[Connection]:
        """Opens strictly read-only; when the sidecars are missing, falls back to plain `mode=ro`.

        A writer whose last connection closes deletes `-wal`/`-shm` (until it reconnects, or for good if it is then
        killed), and a `readonly_shm` reader cannot re-create them (SQLITE_CANTOPEN). Plain `mode=ro` can, where
        the folder is writable; on a read-only mount it fails the same way and the answer is 503 `busy`.
        """
        deadline = time.monotonic() + _OPEN_PATIENCE_SECONDS
        while True:
            with self.engine.connect() as conn:
                try:
                    conn.exec_driver_sql(_PROBE).all()
                except DBAPIError as exc:
                    name = getattr(exc.orig, "sqlite_errorname", "")
                    if name.startswith("SQLITE_BUSY") and time.monotonic() < deadline:
                        time.sleep(_OPEN_RETRY_SECONDS)
                        continue
                    if not name.startswith("SQLITE_CANTOPEN"):
                        raise
                else:
                    yield conn
                    return
            break
        with self.fallback_engine.connect() as conn:
            conn.exec_driver_sql(_PROBE).all()
            yield conn

    def schema_ready(self, conn: Connection) -> bool:
        """True when the schema is the one this code reads (run rows and senders can be queried)."""
        return queries.schema_state(conn) is DbState.READY

    def read_ready(self, read: Callable[[Connection], _T]) -> _T | None:
        """`read` on a short connection when the database exists with the schema this code reads, else None."""
        if not self.exists():
            return None
        with self.connect() as conn:
            return read(conn) if self.schema_ready(conn) else None

    def snapshot(self, conn: Connection, *, with_totals: bool = True) -> Snapshot:
        """The state, totals and generation this connection's transaction reads (its first statement begins it).

        `with_totals=False` (the polled status) leaves `totals` None: the sums read every domain row (~4 ms at
        200,000 senders) after each commit, where whether there are senders at all is one row.
        """
        state = queries.schema_state(conn)
        if state is not DbState.READY:
            return Snapshot(state=state, totals=None, mix=None, generation=None)
        generation = queries.generation(conn)
        filled, mix = self.cache.get(generation, "facts", lambda: (queries.has_senders(conn), queries.source_mix(conn)))
        totals = self.cache.get(generation, "totals", lambda: queries.totals(conn)) if with_totals else None
        return Snapshot(state=DbState.READY if filled else DbState.EMPTY, totals=totals, mix=mix, generation=generation)

    @contextmanager
    def read_snapshot(self) -> Iterator[tuple[Connection, Snapshot] | None]:
        """A read transaction and its snapshot (a too-new schema is a 503); None while the database is missing."""
        if not self.exists():
            yield None
            return
        with self.connect() as conn:
            snap = self.snapshot(conn)
            if snap.state is DbState.TOO_NEW:
                raise ApiError(
                    503, ErrorKind.DB_TOO_NEW, "the database was written by a newer gmail-stats; upgrade the viewer"
                )
            yield conn, snap
