"""An in-memory copy of what the sender filters test, so a filter is counted and paged without a pass in SQLite.

Counting a filter that no SQLite index narrows (a search of one or two characters, a common longer one, a preset)
reads every sender: 10-40 ms at 200,000 senders, each time the filter is new. The viewer never writes the
database, so it can keep, for one version of the file, a columnar copy in numpy arrays (about 300 bytes per
sender): the search keys as one folded byte string, the columns the presets test, and each sort's order. A
filter is then a mask (0.1-6 ms at 200,000 senders) and a page the first ids of the sort's order under it. It also
finds hidden senders by address, with what the pages take away for them (`viewer.query.sender_lookup`, ~90 bytes more
per sender).

Exact by construction where it can be: the orders are read from SQLite with the pages' own `ORDER BY`, the unread
share is SQLite's own quotient. A search means what `LIKE` means on `search_key` (ASCII case folding, the text
ends at a NUL); what `LIKE` does not decide, a search holding a newline or a non-ASCII one of three characters or
more (the trigram index's Unicode folding), stays with SQL (`covers`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Select, or_, select

from shared.schema.models import senders
from viewer.query import sender_lookup
from viewer.query.filters import SenderFilter
from viewer.query.hidden_queries import HiddenSender, Seen
from viewer.query.sender_lookup import SenderLookup, joined
from viewer.query.sender_queries import UNREAD_RATIO, SortKey, SortOrder, order_by, uses_trigrams

_S = senders.c
# A byte this common (one position in 12 or more) is tested at every position at once rather than anchoring a
# search on its positions: at 200,000 senders, 2.5 ms for `e` instead of 10.
_COMMON_BYTE_SHARE = 12
_NO_DOMAIN = -1
# Up to this many senders hold every byte of a search: each is tested on its own (~0.3 µs), not the whole text.
_TESTED_ONE_BY_ONE = 4000
# Rows read from SQLite at a time while the index is built.
_CHUNK = 20_000


@dataclass(frozen=True, slots=True, eq=False)
class IndexedMatch:
    """The senders a filter matches: their count, their mail, and which ones (a mask over the index's senders)."""

    total: int
    messages: int
    mask: NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class SenderIndex:
    """One version of the senders table, in id order (position `i` is the sender `ids[i]`)."""

    ids: NDArray[np.int64]
    mails: NDArray[np.int64]
    unread_ratio: NDArray[np.float64]
    has_unsubscribe: NDArray[np.bool_]
    domain_codes: NDArray[np.int32]
    domains: dict[str, int]
    text: bytes  # every folded search key, each ended by a NUL
    chars: NDArray[np.uint8]  # the same bytes, as an array
    starts: NDArray[np.int64]  # where each sender's key starts in `chars`
    owner: NDArray[np.int32]  # the position of the sender each byte of `chars` belongs to
    frequency: NDArray[np.int64]  # how often each byte value occurs in `chars`
    holders: NDArray[np.uint8]  # per byte value, a packed bit per sender: its key holds that byte
    orders: dict[SortKey, NDArray[np.int32]]  # positions, in each sort's descending order
    domain_names: tuple[str, ...]  # by domain code
    lookup: SenderLookup | None = None  # the addresses and what hidden senders subtract (read by `build`)

    @property
    def size(self) -> int:
        return len(self.ids)

    @staticmethod
    def covers(f: SenderFilter) -> bool:
        """True when every term of `f` means here what it means in SQL (see the module docstring)."""
        q = f.q
        if f.extended:  # dates, sizes and months are matched in SQL only (`sender_queries._extended`)
            return False
        return "\n" not in q and "\x00" not in q and (q.isascii() or not uses_trigrams(q))

    def select(self, f: SenderFilter, *, hidden_ids: list[int]) -> IndexedMatch:
        """The senders `f` matches, less `hidden_ids` (the ids of `f.exclude`, read from SQL by the caller)."""
        mask = self._searched(fold(f.q)) if f.q else np.ones(self.size, dtype=np.bool_)
        if f.domain is not None:
            mask &= self.domain_codes == self.domains.get(f.domain, _NO_DOMAIN - 1)
        if f.min_messages > 1:
            mask &= self.mails >= f.min_messages
        if f.min_unread_ratio > 0:
            mask &= self.unread_ratio >= f.min_unread_ratio
        if f.has_unsubscribe is not None:
            mask &= self.has_unsubscribe == f.has_unsubscribe
        if hidden_ids:
            mask[self._positions(hidden_ids)] = False
        return IndexedMatch(int(np.count_nonzero(mask)), int(self.mails[mask].sum()), mask)

    def page(self, chosen: IndexedMatch, *, sort: SortKey, order: SortOrder, offset: int, limit: int) -> list[int]:
        """The ids of one page of the matches, in the sort's order (ascending is the exact reverse)."""
        ranked = self.orders[sort]
        matched = ranked[chosen.mask[ranked]]
        if order is SortOrder.ASC:
            matched = matched[::-1]
        return [int(i) for i in self.ids[matched[offset : offset + limit]]]

    def hidden_senders(self, names: Iterable[str]) -> list[HiddenSender] | None:
        """What `hidden_queries.hidden_senders` reads from SQLite; None without the lookup."""
        if self.lookup is None:
            return None
        found = self.lookup.positions(names)
        at = np.fromiter(found.values(), dtype=np.int64, count=len(found))
        lookup, codes = self.lookup, self.domain_codes[at].tolist()
        columns = (self.ids, self.mails, lookup.bytes, lookup.unread, lookup.list_unsubscribe)
        ids, mails, size, unread, unsubscribe = (column[at].tolist() for column in columns)
        domains = [self.domain_names[c] for c in codes]
        return [HiddenSender(*row) for row in zip(found, ids, domains, mails, size, unread, unsubscribe, strict=True)]

    def seen_without(self, domains: list[str], hidden_ids: list[int]) -> dict[str, Seen] | None:
        """What `hidden_queries.seen_without` reads from SQLite (for the senders of `hidden_ids`); None without the
        lookup."""
        if self.lookup is None:
            return None
        known = [d for d in domains if d in self.domains]
        hidden = np.zeros(self.size, dtype=np.bool_)
        hidden[self._positions(hidden_ids)] = True
        seen = self.lookup.seen_without([self.domains[d] for d in known], hidden)
        return {d: s for d, s in zip(known, seen, strict=True) if s != (None, None)}

    def _positions(self, ids: list[int]) -> NDArray[np.int64]:
        """The positions of those of `ids` that are in the index."""
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.searchsorted(self.ids, wanted)
        inside = at < self.size
        at, wanted = at[inside], wanted[inside]
        found: NDArray[np.int64] = at[self.ids[at] == wanted]
        return found

    def _searched(self, needle: bytes) -> NDArray[np.bool_]:
        """The senders whose folded key holds `needle` (no NUL, so a match never runs into the next key).

        First the senders whose key holds every byte of it (a bit per sender and byte value): that is the answer
        for one byte, and few such senders are tested one by one; else the needle's positions in all the text."""
        found = np.ones(self.size, dtype=np.bool_)
        for byte in set(needle):
            found &= np.unpackbits(self.holders[byte], count=self.size).view(np.bool_)
        if len(needle) == 1:
            return found
        candidates = np.flatnonzero(found)
        if len(candidates) <= _TESTED_ONE_BY_ONE:
            text, bounds = self.text, np.append(self.starts, len(self.text))
            tested = zip(candidates.tolist(), bounds[candidates].tolist(), bounds[candidates + 1].tolist(), strict=True)
            for position, start, end in tested:
                if text.find(needle, start, end) < 0:
                    found[position] = False
            return found
        return self._scanned(needle)

    def _scanned(self, needle: bytes) -> NDArray[np.bool_]:
        """Every position of `needle` in the text: from the positions of its rarest byte, or, when even that byte
        is common, a comparison at every position."""
        rarest = min(int(self.frequency[byte]) for byte in needle)
        if rarest * _COMMON_BYTE_SHARE > len(self.chars):
            return self._compared(needle)
        return self._anchored(needle)

    def _compared(self, needle: bytes) -> NDArray[np.bool_]:
        chars, last = self.chars, len(self.chars) - len(needle)  # `last`: the last position a match can start at
        at = np.zeros(len(chars), dtype=np.bool_)
        hits = at[: last + 1]
        np.equal(chars[: last + 1], needle[0], out=hits)
        for k in range(1, len(needle)):
            hits &= chars[k : last + 1 + k] == needle[k]
        return np.logical_or.reduceat(at, self.starts)

    def _anchored(self, needle: bytes) -> NDArray[np.bool_]:
        chars, last = self.chars, len(self.chars) - len(needle)
        anchor = min(range(len(needle)), key=lambda k: int(self.frequency[needle[k]]))
        starts = np.flatnonzero(chars == needle[anchor]) - anchor
        starts = starts[(starts >= 0) & (starts <= last)]
        for k, byte in enumerate(needle):
            if k != anchor:
                starts = starts[chars[starts + k] == byte]
        found = np.zeros(self.size, dtype=np.bool_)
        found[self.owner[starts]] = True
        return found


def fold(text: str) -> bytes:
    """A search key or a search as `LIKE` compares them: UTF-8, ASCII letters lowered, ending at a NUL."""
    return text.partition("\x00")[0].encode("utf-8").lower()


def build(conn: Connection) -> SenderIndex:
    """Reads the senders table into a `SenderIndex` (the caller checks that the file did not change meanwhile).

    Through the driver's own cursor, `_CHUNK` rows at a time: SQLAlchemy's result rows would triple the time
    (~1.5 s at 200,000 senders), and all the rows at once would double the viewer's peak memory."""
    orders = {sort: _ids(conn, select(_S.id).order_by(*order_by(sort, SortOrder.DESC))) for sort in SortKey}
    known = or_(_S.unsubscribe_web.is_not(None), _S.unsubscribe_mailto.is_not(None))
    columns = select(_S.id, _S.mails_sent, UNREAD_RATIO, known, _S.domain, _S.search_key).order_by(_S.id)
    index = from_rows(_chunks(conn, columns), orders)
    more = select(_S.id, _S.sender, _S.bytes, _S.unread, _S.list_unsubscribe, _S.first_seen_unix, _S.last_seen_unix)
    lookup = sender_lookup.from_rows(
        _chunks(conn, more.order_by(_S.id)), ids=index.ids, codes=index.domain_codes, domains=len(index.domains)
    )
    return replace(index, lookup=lookup)


def from_rows(
    chunks: Iterable[Sequence[tuple[Any, ...]]], orders: Mapping[SortKey, Sequence[int] | NDArray[np.int64]]
) -> SenderIndex:
    """An index of rows (id, mail count, unread share, has an unsubscribe link, domain, search key) given in id
    order, in chunks, and `orders`: the ids in each sort's descending order."""
    parts: dict[str, list[Any]] = {name: [] for name in ("ids", "mails", "ratios", "unsubscribe", "codes", "lengths")}
    texts: list[bytes] = []
    domains: dict[str, int] = {}
    for rows in chunks:
        keys = [fold(r[5]) + b"\x00" for r in rows]
        texts.append(b"".join(keys))
        parts["ids"].append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        parts["mails"].append(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)))
        parts["ratios"].append(np.array([r[2] for r in rows], dtype=np.float64))
        parts["unsubscribe"].append(np.fromiter((bool(r[3]) for r in rows), dtype=np.bool_, count=len(rows)))
        codes = [domains.setdefault(r[4], len(domains)) if r[4] is not None else _NO_DOMAIN for r in rows]
        parts["codes"].append(np.asarray(codes, dtype=np.int32))
        parts["lengths"].append(np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(rows)))
    ids, lengths = joined(parts["ids"], np.int64), joined(parts["lengths"], np.int64)
    size = len(ids)
    starts = np.zeros(size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    text = b"".join(texts)
    chars = np.frombuffer(text, dtype=np.uint8)
    holders = np.zeros((256, (size + 7) // 8), dtype=np.uint8)
    for byte in np.unique(chars).tolist():
        holders[byte] = np.packbits(np.logical_or.reduceat(chars == byte, starts))
    return SenderIndex(
        ids=ids,
        mails=joined(parts["mails"], np.int64),
        unread_ratio=joined(parts["ratios"], np.float64),
        has_unsubscribe=joined(parts["unsubscribe"], np.bool_),
        domain_codes=joined(parts["codes"], np.int32),
        domains=domains,
        text=text,
        chars=chars,
        starts=starts,
        owner=np.repeat(np.arange(size, dtype=np.int32), lengths),
        frequency=np.bincount(chars, minlength=256).astype(np.int64),
        holders=holders,
        orders={
            sort: np.searchsorted(ids, np.asarray(ranked, dtype=np.int64)).astype(np.int32)
            for sort, ranked in orders.items()
        },
        domain_names=tuple(domains),
    )


def _ids(conn: Connection, stmt: Select[Any]) -> NDArray[np.int64]:
    return np.fromiter((row[0] for rows in _chunks(conn, stmt) for row in rows), dtype=np.int64)


def _chunks(conn: Connection, stmt: Select[Any]) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of a statement without parameters, as the driver's plain tuples, `_CHUNK` at a time."""
    compiled = stmt.compile(dialect=conn.dialect)
    if compiled.params:
        raise ValueError(f"_chunks takes no parameters: {compiled.params}")
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled))
        while rows := cursor.fetchmany(_CHUNK):
            yield rows
    finally:
        cursor.close()
