"""Hidden senders found in the viewer's in-memory copy of the senders (`viewer.query.sender_index`) instead of SQLite.

A set of 1,000 hidden senders the viewer has not seen costs SQLite 1,000 lookups by address (5-12 ms), and the
domain view then asks for the first and last mail of each affected domain's other senders (5-8 ms). The copy
finds the addresses by hash and answers both from columns in well under a millisecond.

Exact by construction: an address matches only when its UTF-8 bytes equal the stored ones (what SQLite's `=`
compares), whatever the hash says; and the first and last mail are SQLite's `min`/`max`, which skip NULLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from viewer.query.hidden_queries import Seen

_HASH_BITS = 0xFFFF_FFFF_FFFF_FFFF
# Where a date is NULL or hidden: it never wins `min` (or `max`) over a group that has a date.
_LATEST = np.iinfo(np.int64).max
_EARLIEST = np.iinfo(np.int64).min


def address_bytes(address: str) -> bytes:
    """An address as SQLite stores it (a name holding a lone surrogate cannot be stored, so it matches nothing)."""
    return address.encode("utf-8", "surrogatepass")


def _hash(address: str) -> int:
    return hash(address) & _HASH_BITS


@dataclass(frozen=True, slots=True, eq=False)
class SenderLookup:
    """Per sender, in the index's positions: its address, and what the pages subtract when it is hidden."""

    addresses: bytes  # every address as UTF-8, back to back
    bounds: NDArray[np.int64]  # where each address starts; one more at the end
    hashes: NDArray[np.uint64]  # sorted
    by_hash: NDArray[np.int32]  # the positions in `hashes`' order
    bytes: NDArray[np.int64]
    unread: NDArray[np.int64]
    list_unsubscribe: NDArray[np.int64]
    first_seen: NDArray[np.int64]
    last_seen: NDArray[np.int64]
    first_known: NDArray[np.bool_]  # False where the date is NULL
    last_known: NDArray[np.bool_]
    by_domain: NDArray[np.int32]  # the positions, grouped by domain code
    domain_bounds: NDArray[np.int64]  # where each domain code's group starts in `by_domain`; one more at the end

    def positions(self, names: Iterable[str]) -> dict[str, int]:
        """The position of each of `names` that is a sender."""
        listed = list(names)
        if not listed or not len(self.hashes):
            return {}
        wanted = np.fromiter((_hash(n) for n in listed), dtype=np.uint64, count=len(listed))
        first = np.searchsorted(self.hashes, wanted, side="left")
        last = np.searchsorted(self.hashes, wanted, side="right")
        # The first sender of each name's hash, its address's bounds read at once (a second is a rare collision).
        likely = self.by_hash[np.minimum(first, len(self.hashes) - 1)]
        starts, ends = self.bounds[likely].tolist(), self.bounds[likely + 1].tolist()
        found: dict[str, int] = {}
        rows = zip(listed, first.tolist(), last.tolist(), likely.tolist(), starts, ends, strict=True)
        for name, lo, hi, position, start, end in rows:
            if lo == hi:
                continue
            encoded = address_bytes(name)
            if self.addresses[start:end] == encoded:
                found[name] = position
                continue
            for other in self.by_hash[lo + 1 : hi].tolist():
                if self.addresses[self.bounds[other] : self.bounds[other + 1]] == encoded:
                    found[name] = other
                    break
        return found

    def seen_without(self, codes: Sequence[int], hidden: NDArray[np.bool_]) -> list[Seen]:
        """Per domain code, the first and last mail of its senders not `hidden` (a mask over positions)."""
        if not codes:
            return []
        wanted = np.asarray(codes, dtype=np.int64)
        starts, ends = self.domain_bounds[wanted], self.domain_bounds[wanted + 1]
        lengths = ends - starts
        offsets = np.zeros(len(wanted), dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        # The members of every wanted domain, one group after another.
        members = self.by_domain[np.arange(int(lengths.sum())) - np.repeat(offsets - starts, lengths)]
        shown = ~hidden[members]
        with_first, with_last = shown & self.first_known[members], shown & self.last_known[members]
        first = np.where(with_first, self.first_seen[members], _LATEST)
        last = np.where(with_last, self.last_seen[members], _EARLIEST)
        has_first = np.add.reduceat(with_first, offsets)
        has_last = np.add.reduceat(with_last, offsets)
        lows = np.minimum.reduceat(first, offsets).tolist()
        highs = np.maximum.reduceat(last, offsets).tolist()
        return [
            (low if has_low else None, high if has_high else None)
            for low, high, has_low, has_high in zip(lows, highs, has_first.tolist(), has_last.tolist(), strict=True)
        ]


def from_rows(
    chunks: Iterable[Sequence[tuple[Any, ...]]], *, ids: NDArray[np.int64], codes: NDArray[np.int32], domains: int
) -> SenderLookup:
    """A lookup of rows (id, address, bytes, unread, list_unsubscribe, first seen, last seen) in id order, in
    chunks, for the index of `ids` (each position's domain code in `codes`, of `domains` codes)."""
    names = ("ids", "lengths", "hashes", "bytes", "unread", "unsubscribe", "first", "last", "first_known", "last_known")
    parts: dict[str, list[Any]] = {name: [] for name in names}
    texts: list[bytes] = []
    for rows in chunks:
        encoded = [address_bytes(r[1]) for r in rows]
        texts.append(b"".join(encoded))
        parts["lengths"].append(np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(rows)))
        parts["hashes"].append(np.fromiter((_hash(r[1]) for r in rows), dtype=np.uint64, count=len(rows)))
        for name, k in (("ids", 0), ("bytes", 2), ("unread", 3), ("unsubscribe", 4), ("first", 5), ("last", 6)):
            parts[name].append(np.fromiter((r[k] or 0 for r in rows), dtype=np.int64, count=len(rows)))  # NULL: 0
        for name, k in (("first_known", 5), ("last_known", 6)):
            parts[name].append(np.fromiter((r[k] is not None for r in rows), dtype=np.bool_, count=len(rows)))
    if not np.array_equal(joined(parts["ids"], np.int64), ids):
        raise ValueError("the senders changed between the two reads of the index")
    lengths = joined(parts["lengths"], np.int64)
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    hashes = joined(parts["hashes"], np.uint64)
    by_hash = np.argsort(hashes, kind="stable").astype(np.int32)
    by_domain = np.argsort(codes, kind="stable").astype(np.int32)
    return SenderLookup(
        addresses=b"".join(texts),
        bounds=bounds,
        hashes=hashes[by_hash],
        by_hash=by_hash,
        bytes=joined(parts["bytes"], np.int64),
        unread=joined(parts["unread"], np.int64),
        list_unsubscribe=joined(parts["unsubscribe"], np.int64),
        first_seen=joined(parts["first"], np.int64),
        last_seen=joined(parts["last"], np.int64),
        first_known=joined(parts["first_known"], np.bool_),
        last_known=joined(parts["last_known"], np.bool_),
        by_domain=by_domain,
        domain_bounds=np.searchsorted(codes[by_domain], np.arange(domains + 1)).astype(np.int64),
    )


def joined(parts: list[Any], dtype: type[np.generic]) -> Any:
    """One array of the chunks' arrays (an empty one of `dtype` when there were no rows); `sender_index` too."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
