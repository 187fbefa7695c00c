"""The life of one ingester process against one database: lock, migrate, abandon stale runs, hand over, close.

Every writing command goes through `ingest_session`, so the lock is always taken before the file is touched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.errors import DatabaseError
from shared.lock import IngestLock
from shared.migrations import migrate
from shared.runs import abandon_open_runs
from shared.timeutil import Clock


@contextmanager
def ingest_session(db_path: Path, *, clock: Clock) -> Iterator[Engine]:
    """Yields the writer engine while holding the ingest lock; raises `LockHeldError` if another ingester runs."""
    if not db_path.parent.is_dir():
        raise DatabaseError(f"the database folder {db_path.parent} does not exist; create it or choose --db")
    lock = IngestLock(db_path)
    lock.acquire()
    try:
        engine = writer_engine(db_path)
        try:
            migrate(engine)
            with engine.begin() as conn:
                abandon_open_runs(conn, now=clock())
        except (OperationalError, sqlite3.DatabaseError) as exc:
            engine.dispose()
            raise DatabaseError(f"cannot open the database {db_path}: {exc}") from exc
        try:
            yield engine
        finally:
            close_writer_keeping_sidecars(engine, db_path)
    finally:
        lock.release()
