"""The viewer's read-only access to the database: short connections, SQLite errors mapped to `ApiError`, and a
small cache of the whole-table totals keyed on the ingesters' progress (the only way the data changes)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from shared.db import reader_engine
from shared.errors import ErrorKind
from viewer.errors import ApiError, from_bad_contents, from_database_error
from viewer.query import queries
from viewer.query.cache import ResponseCache
from viewer.query.hidden_facts import HiddenFacts
from viewer.query.queries import DbState, SourceMix, Totals

# Even with an unchanged key, recompute now and then (cheap insurance against a key that misses a change).
_CACHE_SECONDS = 30.0
# A filter's matches may hold 30,000 ids (~200 KB): a few dozen filters are plenty for one person's browsing.
_MEMO_ENTRIES = 32
_OPEN_PATIENCE_SECONDS = 0.3
_PROBE = "SELECT 1 FROM sqlite_master LIMIT 1"
_OPEN_RETRY_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What every page needs besides the rows: the database state and the whole-table facts."""

    state: DbState
    totals: Totals | None
    mix: SourceMix | None


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        # Strictly read-only first; the plain `mode=ro` engine only when the sidecars are missing (see `connect`).
        self.engine: Engine = reader_engine(path, readonly_shm=True)
        self.fallback_engine: Engine = reader_engine(path)
        self._lock = threading.Lock()
        self._cached: tuple[tuple[int, ...], float, Totals, SourceMix] | None = None
        # Facts worth keeping across requests while the files are unchanged (e.g. a filter's matches).
        self.memo = ResponseCache(ttl=_CACHE_SECONDS, max_entries=_MEMO_ENTRIES)
        # The hidden senders' sums, per set, while the files are unchanged.
        self.hidden = HiddenFacts()

    def exists(self) -> bool:
        return self.path.is_file()

    def change_key(self) -> tuple[tuple[int, int, int] | None, ...]:
        """Identity, size and mtime of the file and its WAL: every commit or checkpoint changes it."""
        key: list[tuple[int, int, int] | None] = []
        for path in (self.path, Path(f"{self.path}-wal")):
            try:
                info = path.stat()
            except OSError:
                key.append(None)
            else:
                key.append((info.st_ino, info.st_size, info.st_mtime_ns))
        return tuple(key)

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
        return queries.schema_state(conn)[0] is DbState.READY

    def snapshot(self, conn: Connection) -> Snapshot:
        state, _version = queries.schema_state(conn)
        if state is not DbState.READY:
            return Snapshot(state=state, totals=None, mix=None)
        totals, mix = self._facts(conn)
        return Snapshot(state=DbState.READY if totals.senders else DbState.EMPTY, totals=totals, mix=mix)

    def _facts(self, conn: Connection) -> tuple[Totals, SourceMix]:
        key = queries.runs_fingerprint(conn)
        # Held while computing: concurrent pollers wait for one computation instead of repeating it.
        with self._lock:
            cached = self._cached
            now = time.monotonic()
            if cached is not None and cached[0] == key and now - cached[1] < _CACHE_SECONDS:
                return cached[2], cached[3]
            totals, mix = queries.totals(conn), queries.source_mix(conn)
            self._cached = (key, now, totals, mix)
            return totals, mix

    def require_ready(self, conn: Connection) -> Snapshot:
        """The snapshot of a readable database; a too-new schema is a 503 the page explains."""
        snap = self.snapshot(conn)
        if snap.state is DbState.TOO_NEW:
            raise ApiError(
                503, ErrorKind.DB_TOO_NEW, "the database was written by a newer gmail-stats; upgrade the viewer"
            )
        return snap
