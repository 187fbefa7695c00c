"""The ingest lock: one ingester per database file, however the file is named, and the viewer's probe of it.

Two kernel `flock`s, because liveness is the lock alone (the kernel drops it when a process dies; never a PID file
or a heartbeat): one on `<real path>.ingest.lock`, next to the database with symlinks resolved, which the viewer
can probe from another container without opening the database; and one on the database file itself, so a second
ingester reaching the same inode through a hard link is refused too. The database descriptor is opened before
and closed after every SQLite connection of the process: closing a descriptor of a file drops the process's POSIX
locks on it, SQLite's included, so nothing else here (above all the probe) ever opens the database.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from pathlib import Path
from types import TracebackType

from shared.errors import DatabaseError, LockHeldError

# The viewer's probe takes the lock for microseconds; a starting ingester retries for this long in all (both locks)
# before it is refused, so a second ingester answers at once rather than after seconds.
ACQUIRE_PATIENCE_SECONDS = 0.25
_RETRY_INTERVAL_SECONDS = 0.05
_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN)


def real_db_path(db_path: Path) -> Path:
    """The database path with every symlink resolved (also for a database that does not exist yet)."""
    return db_path.expanduser().resolve()


def lock_path_for(db_path: Path) -> Path:
    return Path(f"{real_db_path(db_path)}.ingest.lock")


def open_regular(path: Path, flags: int, *, what: str, mode: int = 0o644) -> int:
    """Opens `path` without ever blocking (a FIFO would block `open`) and refuses anything but a regular file."""
    refusal = f"{path} is not a regular file, so it cannot be the {what}; remove it or choose --db"
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except IsADirectoryError:
        raise DatabaseError(refusal) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DatabaseError(refusal)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


class IngestLock:
    """Held for the ingester's lifetime; both descriptors are close-on-exec so children never inherit them."""

    def __init__(self, db_path: Path, *, patience_seconds: float = ACQUIRE_PATIENCE_SECONDS) -> None:
        self.db_path = db_path
        self.real_path = real_db_path(db_path)
        self.path = lock_path_for(db_path)
        self._patience = patience_seconds
        self._fds: list[int] = []
        self._made_lock_file = False

    def acquire(self) -> None:
        """Takes the lock file's lock, then the database file's (creating an empty database file if needed)."""
        self._made_lock_file = not os.path.lexists(self.path)
        try:
            lock_fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, what="ingest lock file")
        except OSError as exc:
            raise DatabaseError(_cannot(self.path, exc, "open the ingest lock file")) from exc
        self._fds = [lock_fd]
        deadline = time.monotonic() + self._patience
        try:
            self._wait_for(lock_fd, deadline)
            try:
                # Owner-only like `shared.db.create_private`: mail metadata is nobody else's business.
                db_fd = open_regular(self.real_path, os.O_RDONLY | os.O_CREAT, what="database", mode=0o600)
            except OSError as exc:
                raise DatabaseError(_cannot(self.real_path, exc, "open the database")) from exc
            self._fds.append(db_fd)
            self._wait_for(db_fd, deadline)
        except BaseException:
            self.release()
            raise

    def _wait_for(self, fd: int, deadline: float) -> None:
        while not _try_flock(fd):
            if time.monotonic() >= deadline:
                raise LockHeldError(f"another ingester is already running against {self.db_path}")
            time.sleep(_RETRY_INTERVAL_SECONDS)

    def release(self) -> None:
        """Closes the database descriptor first (its lock protects the file), then the lock file's."""
        while self._fds:
            os.close(self._fds.pop())

    def release_refusing(self) -> None:
        """Releases after the database was refused, removing the lock file if this acquire made it, so a refused
        file gets nothing beside it. Safe while held: the database file's own lock still excludes a second
        ingester that opened the removed lock file meanwhile."""
        if self._made_lock_file and self._fds:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        self.release()

    def __enter__(self) -> IngestLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _cannot(path: Path, exc: OSError, doing: str) -> str:
    if isinstance(exc, PermissionError) or exc.errno in (errno.EROFS, errno.EACCES):
        return (
            f"cannot {doing} {path} ({exc.strerror}); the ingester needs a folder it can write: fix its "
            "permissions or choose another with --db"
        )
    return f"cannot {doing} {path} ({exc.strerror})"


def is_lock_held(db_path: Path) -> bool:
    """Probe without blocking: works on a read-only mount, never creates a file, never opens the database.

    A lock path that is not a regular file (a FIFO, a folder) is held by nobody: no ingester can start there.
    """
    try:
        fd = open_regular(lock_path_for(db_path), os.O_RDONLY, what="ingest lock file")
    except (FileNotFoundError, NotADirectoryError, DatabaseError):
        return False
    try:
        if _try_flock(fd):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True
    finally:
        os.close(fd)
