"""The senders a narrowing filter matches (a search, a preset, a domain): counted once per filter and database change.

A filtered page needs the filter's exact total, and counting it is a pass over every match (a trigram search, a
scan, an index range) that costs far more than the page itself. So the caller keeps the `Match` while the database
files are unchanged: later pages and sorts of the same filter, and the polls of an open page, reuse it.

When the matches are few, their ids come along and a page is sorted from those rows alone (walking a sort index
for rare matches would read most of it). When they are many, a search is tested on each row (`LIKE`, never a
subquery that lists every match) while a page walks the sort's index: with at least one sender in seven matching,
a page of 50 is found after a few hundred rows, unless the matches gather at the far end of the walk.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from shared.models import senders
from viewer import sender_queries
from viewer.filters import SenderFilter

_S = senders.c
# Up to this many matches the ids themselves drive the page (a sort of at most this many rows, ~10 ms); above it,
# walking a sort's index (or a filter's index range) finds a page soon enough, unless the matches cluster at the far
# end of the walk (mostly-unread senders have few messages), which this limit keeps to the rare mailbox.
SPARSE_LIMIT = 30_000


@dataclass(frozen=True, slots=True)
class Match:
    """The senders a filter matches: their exact count and mail, and their ids when there are few."""

    total: int
    messages: int
    ids: str | None  # every matching id as a JSON array when at most SPARSE_LIMIT, else None


def match(conn: Connection, f: SenderFilter) -> Match:
    """One pass that collects up to SPARSE_LIMIT + 1 matches (all of them when they are few); when there are more, a
    second counts them, reading only the columns it needs. Both are aggregated in SQL: one row comes back.

    A search the trigram index says is common is read as a scan instead: listing most senders from the index costs
    more than the scan it would save.
    """
    common = (
        sender_queries.uses_trigrams(f.q)
        and sender_queries.trigram_hits(conn, f.q, up_to=SPARSE_LIMIT + 1) > SPARSE_LIMIT
    )
    condition = sender_queries.where(f, search_by_row=common)
    first = select(_S.id, _S.mails_sent).where(condition).limit(SPARSE_LIMIT + 1).subquery()
    count, messages, ids = conn.execute(
        select(func.count(), func.coalesce(func.sum(first.c.mails_sent), 0), func.json_group_array(first.c.id))
    ).one()
    if count <= SPARSE_LIMIT:
        return Match(int(count), int(messages), str(ids))
    total, messages = conn.execute(
        select(func.count(), func.coalesce(func.sum(_S.mails_sent), 0)).select_from(senders).where(condition)
    ).one()
    return Match(int(total), int(messages), None)
