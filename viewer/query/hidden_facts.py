"""Hidden senders' facts, kept per set and derived for a new set from the nearest set already known.

Every page with hidden senders subtracts them: from the totals, the senders' paging, the domain rows and the
monthly series. Looking 1,000 of them up in SQLite costs 3-9 ms per question, and each Hide click (or its undo)
makes a new set that differs from the last one by one sender. So the facts of the last few sets are kept while
the files are unchanged, and a new set's facts are the nearest known set's, corrected by the senders it adds or
drops: SQLite is asked about those few senders, not the 1,000.

Exact by construction: the sums are sums over the members (a sender's part is the same in both sets), and the
first and last mail of a domain's other senders are kept per domain and its own hidden members. Everything is
dropped at the first change of the files, as every cache of the viewer is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from sqlalchemy import Connection

from viewer.query import hidden_queries
from viewer.query.hidden_queries import HiddenByDomain, HiddenSender, MonthSums, Seen, SeenLookup

# Sets kept per kind of fact (a person's tab or two; each Hide click replaces the nearest).
_RECENT_SETS = 4
# (domain, its hidden members) pairs whose other senders' first and last mail are kept.
_SEEN_ENTRIES = 20_000

T = TypeVar("T")


class InMemory(Protocol):
    """The viewer's copy of the senders (`viewer.query.sender_index`), which answers as SQLite would, or None."""

    def hidden_senders(self, names: Iterable[str]) -> list[HiddenSender] | None: ...

    def seen_without(self, domains: list[str], hidden_ids: list[int]) -> dict[str, Seen] | None: ...


@dataclass(frozen=True, slots=True, eq=False)
class HiddenSet:
    """The members of one hidden set that are senders, and what the pages subtract for them."""

    found: Mapping[str, HiddenSender]
    messages: int
    by_domain: HiddenByDomain
    members_by_domain: Mapping[str, tuple[str, ...]]

    @property
    def senders(self) -> int:
        return len(self.found)

    @property
    def ids(self) -> list[int]:
        return [h.id for h in self.found.values()]

    @classmethod
    def of(cls, found: Mapping[str, HiddenSender]) -> HiddenSet:
        sums: dict[str, list[int]] = {}
        members: dict[str, list[str]] = {}
        for h in found.values():
            part = sums.setdefault(h.domain, [0, 0, 0, 0, 0])
            part[0] += 1
            part[1] += h.mails_sent
            part[2] += h.bytes
            part[3] += h.unread
            part[4] += h.list_unsubscribe
            members.setdefault(h.domain, []).append(h.sender)
        return cls(
            found=found,
            messages=sum(h.mails_sent for h in found.values()),
            by_domain={d: (s[0], s[1], s[2], s[3], s[4]) for d, s in sums.items()},
            members_by_domain={d: tuple(sorted(names)) for d, names in members.items()},
        )


EMPTY = HiddenSet.of({})


@dataclass
class _Kept:
    """Everything known for one version of the files."""

    version: Hashable
    sets: OrderedDict[frozenset[str], HiddenSet] = field(default_factory=OrderedDict)
    months: OrderedDict[frozenset[str], MonthSums] = field(default_factory=OrderedDict)
    seen: dict[tuple[str, tuple[str, ...]], Seen] = field(default_factory=dict)


def _nearest(known: Mapping[frozenset[str], T], members: frozenset[str]) -> tuple[frozenset[str], T] | None:
    """The known set fewest senders away from `members`, if that is fewer than looking every member up."""
    best: tuple[int, frozenset[str], T] | None = None
    for other, value in known.items():
        distance = len(members - other) + len(other - members)
        if distance < len(members) and (best is None or distance < best[0]):
            best = (distance, other, value)
    return None if best is None else (best[1], best[2])


class HiddenFacts:
    """Thread-safe; the caller passes the files' change key read *before* its own reads (as the memo does), so a
    change under way is never kept under the new key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept = _Kept(version=None)

    def hidden_set(
        self, conn: Connection, version: Hashable, exclude: tuple[str, ...], memory: InMemory | None = None
    ) -> HiddenSet:
        """The senders of `exclude` and their sums (those not known yet looked up in `memory` when given: the
        viewer's copy of this version of the senders)."""
        if not exclude:
            return EMPTY
        members = frozenset(exclude)
        kept, known, nearest = self._lookup(version, members, lambda k: k.sets)
        if known is not None:
            return known
        if nearest is None:
            found = {h.sender: h for h in _hidden_senders(conn, members, memory)}
        else:
            other, base = nearest
            found = dict(base.found)
            for name in other - members:
                found.pop(name, None)
            found.update((h.sender, h) for h in _hidden_senders(conn, members - other, memory))
        result = HiddenSet.of(found)
        self._keep(kept, kept.sets, members, result)
        return result

    def months(self, conn: Connection, version: Hashable, exclude: tuple[str, ...]) -> MonthSums:
        """The hidden senders' mail per month, summed."""
        if not exclude:
            return {}
        members = frozenset(exclude)
        kept, known, nearest = self._lookup(version, members, lambda k: k.months)
        if known is not None:
            return known
        if nearest is None:
            result = hidden_queries.months_of(conn, members)
        else:
            other, base = nearest
            result = dict(base)
            _add(result, hidden_queries.months_of(conn, members - other), sign=1)
            _add(result, hidden_queries.months_of(conn, other - members), sign=-1)
        self._keep(kept, kept.months, members, result)
        return result

    def seen_without(
        self, conn: Connection, version: Hashable, hidden: HiddenSet, memory: InMemory | None = None
    ) -> SeenLookup:
        """For `rollup_queries.domains_page`: per domain, the first and last mail of its senders not hidden."""

        def lookup(domains: list[str]) -> dict[str, Seen]:
            keys = {d: (d, hidden.members_by_domain.get(d, ())) for d in domains}
            with self._lock:
                kept = self._current(version)
                found = {d: kept.seen[k] for d, k in keys.items() if k in kept.seen}
            missing = [d for d in domains if d not in found]
            if missing:
                their_hidden = [name for d in missing for name in hidden.members_by_domain.get(d, ())]
                ids = [hidden.found[n].id for n in their_hidden]
                fresh = memory.seen_without(missing, ids) if memory is not None else None
                if fresh is None:
                    fresh = hidden_queries.seen_without(conn, missing, their_hidden)
                looked_up = {d: fresh.get(d, (None, None)) for d in missing}
                found.update(looked_up)
                with self._lock:
                    if kept is self._kept:
                        if len(kept.seen) + len(looked_up) > _SEEN_ENTRIES:
                            kept.seen.clear()
                        kept.seen.update((keys[d], v) for d, v in looked_up.items())
            return found

        return lookup

    def _current(self, version: Hashable) -> _Kept:
        """What is kept for `version` (a new version forgets everything). Called with the lock held."""
        if self._kept.version != version:
            self._kept = _Kept(version=version)
        return self._kept

    def _lookup(
        self,
        version: Hashable,
        members: frozenset[str],
        kind: Callable[[_Kept], OrderedDict[frozenset[str], T]],
    ) -> tuple[_Kept, T | None, tuple[frozenset[str], T] | None]:
        with self._lock:
            kept = self._current(version)
            known_sets = kind(kept)
            known = known_sets.get(members)
            if known is not None:
                known_sets.move_to_end(members)
                return kept, known, None
            return kept, None, _nearest(known_sets, members)

    def _keep(self, kept: _Kept, known_sets: OrderedDict[frozenset[str], T], members: frozenset[str], value: T) -> None:
        with self._lock:
            if kept is not self._kept:  # the files changed meanwhile: this is already stale
                return
            known_sets[members] = value
            while len(known_sets) > _RECENT_SETS:
                known_sets.popitem(last=False)


def _hidden_senders(conn: Connection, names: frozenset[str], memory: InMemory | None) -> list[HiddenSender]:
    found = memory.hidden_senders(names) if memory is not None and names else None
    return found if found is not None else hidden_queries.hidden_senders(conn, names)


def _add(sums: dict[str, tuple[int, int]], part: MonthSums, *, sign: int) -> None:
    for month, (messages, size) in part.items():
        n, b = sums.get(month, (0, 0))
        n, b = n + sign * messages, b + sign * size
        if n or b:
            sums[month] = (n, b)
        else:
            sums.pop(month, None)
