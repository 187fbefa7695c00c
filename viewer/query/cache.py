"""The viewer's one cache: answers computed inside a read transaction, keyed on the generation that transaction saw.

Every ingester commit raises `data_generation` in its own transaction (`shared.schema.migration_generation`), so an
answer read at generation `g` is the answer for every reader of `g`: nothing is ever stale, and nothing expires by
time. Only the newest generation seen is kept (a reader still on an older one computes without storing), bounded
in bytes, least recently used first out; concurrent misses for one key compute it once. No FastAPI, no SQL here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from viewer.query.queries import Generation

T = TypeVar("T")

# A serialised page is 10-40 KB, a filter's matches up to ~200 KB of ids: a person's browsing fits many times.
MAX_BYTES = 16 * 1024 * 1024
# What a small value (a dataclass of counts) is taken to weigh.
SMALL_BYTES = 256


def weight(value: object) -> int:
    if isinstance(value, bytes | str):
        return len(value) + SMALL_BYTES
    return SMALL_BYTES


class SnapshotCache:
    def __init__(self, *, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._generation: Generation | None = None
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(
        self, generation: Generation | None, key: Hashable, compute: Callable[[], T], size: Callable[[T], int] = weight
    ) -> T:
        """The answer for `key` at `generation`, computed once; None (a schema without the table): never kept."""
        if generation is None:
            return compute()
        with self._guard:
            if self._generation is None or generation[0] != self._generation[0] or generation[1] > self._generation[1]:
                self._generation = generation
                self._entries.clear()
                self._locks.clear()
                self._bytes = 0
            lock = self._locks.setdefault(key, threading.Lock()) if generation == self._generation else None
        if lock is None:  # an older snapshot: right for its reader, never kept (computed outside the guard, which
            return compute()  # a nested `get` of the answer, such as the hidden senders' sums, takes again)
        with lock:
            with self._guard:
                entry = self._entries.get(key) if generation == self._generation else None
                if entry is not None:
                    self._entries.move_to_end(key)
                    return entry[0]  # type: ignore[return-value]
            value = compute()
            cost = size(value)
            with self._guard:
                if generation == self._generation and cost <= self.max_bytes:
                    self._entries[key] = (value, cost)
                    self._bytes += cost
                    while self._bytes > self.max_bytes:
                        gone, (_, freed) = self._entries.popitem(last=False)
                        self._locks.pop(gone, None)
                        self._bytes -= freed
            return value
