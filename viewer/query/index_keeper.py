"""Keeps the viewer's `SenderIndex` in step with the database: built in the background once the file has settled.

While an ingester runs, the file changes several times a second and a copy would be stale before it was read
(~1.5 s of work at 200,000 senders), so filters are counted by SQL then. Once no write has touched the database
or its WAL for `SETTLE_SECONDS`, one thread reads a new copy; it is handed out only while the files' identity,
size and mtime are what they were when it was read. A write after the settle period lands in a later mtime tick,
so it always changes that key (`Database.change_key` alone can miss two commits within one tick).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection

if TYPE_CHECKING:
    from viewer.query.sender_index import SenderIndex

SETTLE_SECONDS = 2.0
log = logging.getLogger("viewer")

ChangeKey = tuple[tuple[int, int, int] | None, ...]


@dataclass(frozen=True, slots=True, eq=False)
class KeptIndex:
    """An index and the version of the files it was read from (what answers computed from it are keyed on)."""

    key: ChangeKey
    index: SenderIndex


class IndexKeeper:
    """Hands out the index of the current database version, or None while there is none (SQL answers then)."""

    def __init__(
        self,
        *,
        change_key: Callable[[], ChangeKey],
        connect: Callable[[], AbstractContextManager[Connection]],
        is_ready: Callable[[Connection], bool],
        build: Callable[[Connection], SenderIndex],
        enabled: bool = True,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self._change_key = change_key
        self._connect = connect
        self._is_ready = is_ready
        self._build_index = build
        self._enabled = enabled
        self._settle_ns = int(settle_seconds * 1e9)
        self._lock = threading.Lock()
        self._current: KeptIndex | None = None
        self._tried: ChangeKey | None = None  # the version last read (or found unreadable): not read again
        self._building: threading.Thread | None = None
        self.built = threading.Event()  # set after each attempt (tests wait on it)

    def get(self) -> KeptIndex | None:
        """The index when it holds the database as it is now; else None, and a build starts if the file settled."""
        if not self._enabled:
            return None
        key = self._change_key()
        with self._lock:
            if self._current is not None:
                if self._current.key == key:
                    return self._current
                self._current = None  # its memory goes now, not at the next build
            if key != self._tried and self._building is None and _settled(key, self._settle_ns):
                self._tried = key
                self.built.clear()
                self._building = threading.Thread(target=self._build, args=(key,), name="sender-index", daemon=True)
                self._building.start()
        return None

    def close(self, *, wait: float = 10.0) -> None:
        """No more reads; waits for one under way (it holds a connection to the database about to be closed)."""
        with self._lock:
            self._enabled = False
            building, self._current = self._building, None
        if building is not None:
            building.join(wait)

    def _build(self, key: ChangeKey) -> None:
        index: SenderIndex | None = None
        started = time.perf_counter()
        try:
            with self._connect() as conn:
                if self._is_ready(conn):
                    index = self._build_index(conn)
        except Exception:  # the index only saves time: SQL keeps answering, and the next version is tried again
            log.exception("could not read the senders into memory; filters are counted by SQLite instead")
        changed = self._change_key() != key
        with self._lock:
            if index is not None and not changed and self._enabled:  # else written while read, or closed
                self._current = KeptIndex(key, index)
                log.info("sender index: %d senders in %.2f s", index.size, time.perf_counter() - started)
            self._building = None
        self.built.set()


def _settled(key: ChangeKey, settle_ns: int) -> bool:
    """True when the database exists and neither it nor its WAL was written in the last `settle_ns`."""
    if key[0] is None:
        return False
    now = time.time_ns()
    return all(part is None or now - part[2] >= settle_ns for part in key)
