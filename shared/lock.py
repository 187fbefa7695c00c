"""The ingest lock: a kernel `flock` on `<db>.ingest.lock`, so one ingester runs per database however started.

Liveness is the lock alone — never a PID file or a heartbeat — because the kernel drops it when a process dies.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from pathlib import Path
from types import TracebackType

from shared.errors import LockHeldError

# The viewer's probe takes the lock for an instant; a starting ingester retries for about this long first.
ACQUIRE_PATIENCE_SECONDS = 2.0
_RETRY_INTERVAL_SECONDS = 0.05


def lock_path_for(db_path: Path) -> Path:
    return Path(f"{db_path}.ingest.lock")


class IngestLock:
    """Held for the ingester's lifetime; the descriptor is close-on-exec so children never inherit it."""

    def __init__(self, db_path: Path, *, patience_seconds: float = ACQUIRE_PATIENCE_SECONDS) -> None:
        self.db_path = db_path
        self.path = lock_path_for(db_path)
        self._patience = patience_seconds
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self._patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockHeldError(f"another ingester is already running against {self.db_path}") from None
                time.sleep(_RETRY_INTERVAL_SECONDS)
            else:
                self._fd = fd
                return

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> IngestLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def is_lock_held(db_path: Path) -> bool:
    """Probe without blocking: works on a read-only mount, and never creates the lock file."""
    try:
        # O_NONBLOCK: opening a FIFO planted at the lock path would otherwise wait for a writer forever.
        fd = os.open(lock_path_for(db_path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # no ingester locks a FIFO or device (it refuses one), so none is running
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
