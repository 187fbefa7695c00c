"""The life of one ingester process against one database: lock, migrate, abandon stale runs, hand over, close.

Every writing command goes through `ingest_session`, so the lock is always taken before the file is touched.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from shared.db import close_writer_keeping_sidecars, reader_engine, tighten_database_to_private, writer_engine
from shared.db_errors import SQLITE_FAILURES, database_error
from shared.errors import DatabaseError, LockHeldError
from shared.lock import IngestLock, real_db_path
from shared.runs import Run, abandon_open_runs, open_run
from shared.schema.migrations import migrate
from shared.timeutil import Clock, format_utc

# The first bytes of every SQLite 3 file (https://www.sqlite.org/fileformat.html#the_database_header).
SQLITE_HEADER = b"SQLite format 3\x00"


@contextmanager
def ingest_session(db_path: Path, *, clock: Clock) -> Iterator[Engine]:
    """Yields the writer engine while holding the ingest lock; raises `LockHeldError` if another ingester runs.

    The database is opened by its real path (symlinks resolved), the one the lock is bound to.
    """
    real = real_db_path(db_path)
    if not real.parent.is_dir():
        raise DatabaseError(f"the database folder {db_path.parent} does not exist; create it or choose --db")
    refuse_foreign_file(db_path, real)
    lock = IngestLock(db_path)
    try:
        lock.acquire()
    except LockHeldError as exc:
        holder = _holder(real)
        raise LockHeldError(f"{exc}: {holder}" if holder else str(exc)) from None
    try:
        engine = writer_engine(real)
        try:
            migrate(engine)
            with engine.begin() as conn:
                abandon_open_runs(conn, now=clock())
        except SQLITE_FAILURES as exc:
            engine.dispose()
            lock.release_refusing()  # a damaged file keeps nothing of ours beside it
            raise database_error(db_path, exc) from exc
        except DatabaseError:
            engine.dispose()
            lock.release_refusing()  # nor does one too new for this version
            raise
        tighten_database_to_private(real)  # only a file known to be ours (migrated) is re-moded
        try:
            yield engine
        finally:
            close_writer_keeping_sidecars(engine, real)
    finally:
        lock.release()


def refuse_foreign_file(db_path: Path, real: Path) -> None:
    """Refuses, before anything is created beside it, a non-empty file that is no SQLite database at all."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block here
    except OSError:
        return  # a new database, or a problem the lock reports in its own words
    try:
        head = os.read(fd, len(SQLITE_HEADER)) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    if head and head != SQLITE_HEADER:  # what SQLite itself would say, before the lock file is made beside it
        raise database_error(db_path, sqlite3.DatabaseError("file is not a database"))


def _holder(real: Path) -> str | None:
    """Which run the lock's holder is running, read without writing (None when the file cannot tell yet)."""
    engine = reader_engine(real)
    try:
        with engine.connect() as conn:
            run = open_run(conn)
    except SQLITE_FAILURES:
        return None
    finally:
        engine.dispose()
    return describe_run(run) if run is not None else None


def describe_run(run: Run) -> str:
    """`run 3 (import of takeout.mbox, started 2026-12-02 06:40 UTC)`: a run as a person recognises it."""
    what = f"import of {Path(run.mbox_path).name}" if run.mbox_path else "Gmail scan"
    return f"run {run.run_id} ({what}, started {format_utc(run.started_at_unix)}); wait for it to end or cancel it"
