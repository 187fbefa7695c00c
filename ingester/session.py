"""The life of one ingester process against one database: lock, migrate, abandon stale runs, hand over, close.

Every writing command goes through `ingest_session`, so the lock is always taken before the file is touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.db_errors import SQLITE_FAILURES, database_error
from shared.errors import DatabaseError
from shared.lock import IngestLock, real_db_path
from shared.migrations import migrate
from shared.runs import abandon_open_runs
from shared.timeutil import Clock


@contextmanager
def ingest_session(db_path: Path, *, clock: Clock) -> Iterator[Engine]:
    """Yields the writer engine while holding the ingest lock; raises `LockHeldError` if another ingester runs.

    The database is opened by its real path (symlinks resolved), the one the lock is bound to.
    """
    real = real_db_path(db_path)
    if not real.parent.is_dir():
        raise DatabaseError(f"the database folder {db_path.parent} does not exist; create it or choose --db")
    lock = IngestLock(db_path)
    lock.acquire()
    try:
        engine = writer_engine(real)
        try:
            migrate(engine)
            with engine.begin() as conn:
                abandon_open_runs(conn, now=clock())
        except SQLITE_FAILURES as exc:
            engine.dispose()
            raise database_error(db_path, exc) from exc
        try:
            yield engine
        finally:
            close_writer_keeping_sidecars(engine, real)
    finally:
        lock.release()
