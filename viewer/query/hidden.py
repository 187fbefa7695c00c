"""Hidden-sender sets the page registers once and then names by id, so any number of hidden senders can leave
totals, paging, the domain view, volume and export (a query string holds only about 200 of them).

Held in memory only, by content (the id is a hash of the set, so one set always has one id); the browser keeps
the authoritative list and sends it again when this viewer answers `hidden_unknown` (after a restart or eviction).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable

MAX_SETS = 8  # a few tabs and browsers at once; an evicted set is simply sent again
MAX_HIDDEN = 100_000
ID_PATTERN = "^[0-9a-f]{32}$"


def normalise(senders: Iterable[str]) -> tuple[str, ...]:
    """What `exclude=` also does: trimmed (no stored sender has surrounding blanks), unique and sorted.

    Otherwise a sender is named exactly as the API gives it: an address is stored lower-case, but a sender without
    one keeps its case ("Mailer Daemon"), and `""` is the messages that named no sender."""
    return tuple(sorted({s.strip() for s in senders}))


def set_id(senders: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(senders).encode()).hexdigest()[:32]


class HiddenSets:
    """Thread-safe, least recently used first out."""

    def __init__(self, *, capacity: int = MAX_SETS) -> None:
        self._capacity = capacity
        self._sets: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, senders: Iterable[str]) -> tuple[str, tuple[str, ...]]:
        """Registers a set and returns its id and normalised members."""
        members = normalise(senders)
        key = set_id(members)
        with self._lock:
            self._sets[key] = members
            self._sets.move_to_end(key)
            while len(self._sets) > self._capacity:
                self._sets.popitem(last=False)
        return key, members

    def get(self, key: str) -> tuple[str, ...] | None:
        with self._lock:
            members = self._sets.get(key)
            if members is not None:
                self._sets.move_to_end(key)
            return members
