"""A tiny response cache for the polled routes: many pollers asking the same question share one answer (no
FastAPI here: `viewer.web.cached.answer` serves it from the event loop).

An entry is reused only while the database files are unchanged (same `change_key`) and for at most `ttl`
seconds, so a change is visible on the next poll; concurrent misses for one key compute it once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

MAX_ENTRIES = 256


class ResponseCache:
    def __init__(self, *, ttl: float, max_entries: int = MAX_ENTRIES) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, Hashable, Any]] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def peek(self, key: Hashable, version: Hashable) -> Any | None:
        """The fresh entry for `key` or None, without waiting for a computation (safe on the event loop)."""
        entry = self._entries.get(key)  # one dict read: atomic under the GIL
        if entry is not None and entry[1] == version and time.monotonic() - entry[0] < self.ttl:
            return entry[2]
        return None

    def get(self, key: Hashable, version: Hashable, compute: Callable[[], Any]) -> Any:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            entry = self._entries.get(key)
            now = time.monotonic()
            if entry is not None and entry[1] == version and now - entry[0] < self.ttl:
                return entry[2]
            value = compute()
            with self._guard:
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
                    self._locks = {key: lock}
                self._entries[key] = (time.monotonic(), version, value)
            return value

    def clear(self) -> None:
        with self._guard:
            self._entries.clear()
