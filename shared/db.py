"""Engine set-up: the ingester's writer (WAL) and the viewer's read-only reader; nothing here runs DDL."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, NullPool, StaticPool

from shared.schema.migration_generation import BUMP_SQL, GENERATION_TABLE

BUSY_TIMEOUT_MS = 5000
_HAS_GENERATION = "gmail_stats_has_generation"
# Large enough to keep the hot index pages of a 500k-message mailbox in memory, small enough for the RSS budget.
WRITER_CACHE_KIB = 8 * 1024


def sidecar_paths(db_path: Path) -> tuple[Path, Path]:
    return Path(f"{db_path}-wal"), Path(f"{db_path}-shm")


def create_private(path: Path) -> None:
    """Creates `path` empty and owner-only (0600) unless it exists: mail metadata is nobody else's business.

    SQLite gives `-wal`/`-shm` the database file's mode, so they follow; a zero-byte file is an empty database.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def tighten_database_to_private(db_path: Path) -> None:
    """`tighten_to_private` for the database and its sidecars, once the file is known to be ours (migrated)."""
    for path in (db_path, *sidecar_paths(db_path)):
        tighten_to_private(path)


def tighten_to_private(path: Path) -> None:
    """Drops group and other permissions from an existing file of ours (databases made before files were 0600).

    Best effort: a file of another user, a read-only file system or a missing file is left as it is.
    """
    try:
        status = os.stat(path)
        if status.st_uid == os.geteuid() and status.st_mode & 0o077:
            os.chmod(path, stat.S_IMODE(status.st_mode) & 0o700)
    except OSError:
        return


def writer_engine(db_path: Path) -> Engine:
    """One connection in autocommit mode at the driver, with explicit `BEGIN IMMEDIATE` for every transaction.

    pysqlite's own transaction emulation would not wrap DDL, and a migration step must commit with its
    version bump or not at all (SQLAlchemy's documented pysqlite recipe).
    """
    create_private(db_path)  # before SQLite would create it with the umask's mode (usually 0644)

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(str(db_path), isolation_level=None)

    # One connection for the engine's life (reconnecting per transaction would checkpoint on every close), and
    # sqlite3's own thread check left on: an engine belongs to the thread that uses it (see ingester.runs.heartbeat).
    engine = create_engine("sqlite://", creator=connect, poolclass=StaticPool)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: object) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # type: ignore[attr-defined]

    @event.listens_for(engine, "commit")
    def _bump(conn: Connection) -> None:
        bump_generation(conn)

    return engine


def bump_generation(conn: Connection) -> None:
    """Raises `data_generation` inside the transaction about to commit, so no commit leaves it unchanged.

    Every write the ingester makes passes here (batches, run rows, heartbeats, migrations); before schema step 8
    has created the table there is nothing to raise. Known present once seen: a table is never dropped.
    """
    info = conn.info
    if not info.get(_HAS_GENERATION):
        found = conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (GENERATION_TABLE,)
        ).first()
        if found is None:
            return
        info[_HAS_GENERATION] = True
    conn.exec_driver_sql(BUMP_SQL)


def reader_engine(db_path: Path, *, readonly_shm: bool = False, immutable: bool = False) -> Engine:
    """A fresh `mode=ro` connection per checkout, with `query_only`; it never creates the database file.

    Every checkout reads inside one transaction (`BEGIN` at its first statement, rolled back when it is returned),
    so all its statements see a single commit, never two (pysqlite would run each SELECT in its own).

    Plain `mode=ro` still opens the `-shm` read-write (rewriting it, and creating missing sidecars);
    `readonly_shm=True` leaves every file byte-identical, as on a read-only mount, but then cannot open a WAL
    database whose `-wal`/`-shm` are missing (SQLITE_CANTOPEN). `immutable=True` reads the main file alone, without
    locks or sidecars: right only where no writer can be (a read-only folder with no `-wal` left beside the file).
    """
    uri = f"file:{quote(str(db_path.absolute()))}?mode=ro"
    if readonly_shm:
        uri += "&readonly_shm=1"
    if immutable:
        uri += "&immutable=1"

    def connect() -> sqlite3.Connection:
        # Per checkout (NullPool): opened, used and closed on one thread; transactions are ours (`_begin`).
        return sqlite3.connect(uri, uri=True, isolation_level=None)

    engine = create_engine("sqlite://", creator=connect, poolclass=NullPool)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: object) -> None:
        # A deferred transaction: its read snapshot is taken at the first SELECT (SQLAlchemy's pysqlite recipe).
        conn.exec_driver_sql("BEGIN")  # type: ignore[attr-defined]

    return engine


def enable_wal(engine: Engine) -> None:
    """Switches the file to WAL (persistent); `migrate` calls it once the file is known not to be too new."""
    raw = engine.raw_connection()  # outside any transaction: the journal mode cannot change inside one
    try:
        raw.driver_connection.execute("PRAGMA journal_mode=WAL")  # type: ignore[union-attr]
    finally:
        raw.close()


def close_writer_keeping_sidecars(engine: Engine, db_path: Path) -> None:
    """Checkpoint, close, and leave empty `-wal`/`-shm` files behind.

    A reader on a read-only mount cannot open a WAL database whose sidecars are missing (SQLITE_CANTOPEN), and
    SQLite deletes both on the last clean close. Call this while still holding the ingest lock, so no other
    writer can be between the close and the re-creation.
    """
    raw = engine.raw_connection()  # outside any transaction: a checkpoint inside one is refused
    try:
        raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[union-attr]
    finally:
        raw.close()
    engine.dispose()
    for sidecar in sidecar_paths(db_path):
        if not sidecar.exists():
            create_private(sidecar)
