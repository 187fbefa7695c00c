"""Searches of one or two characters, which the trigram index cannot answer: exact counts from a `LIKE` scan.

Without an index of one- and two-character substrings every sender is scanned once (~20 ms for 200k); what made
these searches slow was walking a sort index row by row for matches that are rare or absent. So one scan collects
the matches when they are few (the page is then sorted from those ids alone); when they are many, a second scan
counts them and a page is a short index walk. The caller keeps the result while the database is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, func, select

from shared.models import senders
from viewer.filters import SenderFilter
from viewer.sql_lists import in_json

_S = senders.c
# Up to this many matches the ids themselves drive the page (a sort of at most this many rows); above it, at least
# one sender in every ~20 matches, and walking a sort index finds a page of 50 after about a thousand rows.
SPARSE_LIMIT = 10_000
TRIGRAM = 3


@dataclass(frozen=True, slots=True)
class Match:
    """The senders a filter matches: their exact count and mail, and their ids when there are few."""

    total: int
    messages: int
    ids: str | None  # every matching id as a JSON array when at most SPARSE_LIMIT, else None


def applies(f: SenderFilter) -> bool:
    """True when the search is too short for the trigram index."""
    return 0 < len(f.q) < TRIGRAM


def match(conn: Connection, condition: ColumnElement[bool]) -> Match:
    """One scan when matches are few (it collects them all); when many, that scan stops early and a second
    counts them, reading only the columns it needs."""
    first = select(_S.id, _S.mails_sent).where(condition).limit(SPARSE_LIMIT + 1).subquery()
    # Aggregated in SQL: one row comes back, not thousands.
    count, messages, ids = conn.execute(
        select(func.count(), func.coalesce(func.sum(first.c.mails_sent), 0), func.json_group_array(first.c.id))
    ).one()
    if count <= SPARSE_LIMIT:
        return Match(int(count), int(messages), str(ids))
    total, messages = conn.execute(
        select(func.count(), func.coalesce(func.sum(_S.mails_sent), 0)).select_from(senders).where(condition)
    ).one()
    return Match(int(total), int(messages), None)


def among(ids: str) -> ColumnElement[bool]:
    """`senders.id` in the JSON array `ids` (any number of ids, one parameter)."""
    return in_json(_S.id, ids)
