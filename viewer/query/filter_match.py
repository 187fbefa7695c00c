"""The senders a narrowing filter matches (a search, a preset, a domain): counted once per filter and generation.

A filtered page needs the filter's total, and counting it is a pass over every match (a trigram search, a scan, an
index range) that costs far more than the page itself. So the caller keeps the `Match` in the one cache: later pages
and sorts of the same filter, and the polls of an open page, reuse it until the next commit.

When the matches are few, their ids come along and a page is sorted from those rows alone (walking a sort index
for rare matches would read most of it). When they are many, a search is tested on each row (`LIKE`, never a
subquery that lists every match) while a page walks the sort's index: with at least one sender in seven matching,
a page of 50 is found after a few hundred rows, unless the matches gather at the far end of the walk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import ColumnElement, Connection, and_, func, select

from shared.schema.models import senders
from viewer.query import sender_queries
from viewer.query.filters import SenderFilter
from viewer.query.sql_lists import in_values

_S = senders.c
# Up to this many matches the ids themselves drive the page (a sort of at most this many rows, ~10 ms); above it,
# walking a sort's index (or a filter's index range) finds a page soon enough, unless the matches cluster at the far
# end of the walk (mostly-unread senders have few messages), which this limit keeps to the rare mailbox.
SPARSE_LIMIT = 30_000
# Senders a search is first tried on, to guess whether it matches more than SPARSE_LIMIT (~0.2 ms).
SAMPLE = 2000


@dataclass(frozen=True, slots=True)
class Match:
    """The senders a filter matches: their count and mail, and their ids when there are few.

    Past SPARSE_LIMIT matches the count is exact only when asked for (`exact`); else it stops there, as datasette's
    `count_limit` does: `total` is SPARSE_LIMIT, `messages` unknown, and the page says "30,000+"."""

    total: int
    messages: int | None
    ids: str | None  # every matching id as a JSON array when at most SPARSE_LIMIT, else None
    exact: bool = True


CAPPED = Match(SPARSE_LIMIT, None, None, exact=False)


def match(conn: Connection, f: SenderFilter, *, exact: bool = False) -> Match:
    """One pass that collects up to SPARSE_LIMIT + 1 matches (all of them when they are few); when there are more,
    the count stops there unless `exact`, when a second pass counts them, reading only the columns it needs. Both
    are aggregated in SQL: one row comes back.

    A search the trigram index says is common is read as a scan instead: listing most senders from the index costs
    more than the scan it would save. A search alone (hidden senders aside) that is, or may be, tested on every
    sender is read from `ix_senders_search` (see `_search_match`).
    """
    # A search and nothing else but hidden senders, that `LIKE` may decide on each sender's key when it is too short
    # for the trigram index, or ASCII (the index's Unicode folding stays with other searches).
    alone = bool(f.q) and replace(f, exclude=()) == SenderFilter(q=f.q)
    if alone and not sender_queries.uses_trigrams(f.q):
        dense = exact and _looks_dense(conn, sender_queries.key_like(f.q))
        return _search_match(conn, f, dense=dense, exact=exact)
    # The trigram index matches more than SPARSE_LIMIT senders for `q` (a bounded count of its own).
    common = sender_queries.uses_trigrams(f.q) and (
        sender_queries.trigram_hits(conn, f.q, up_to=SPARSE_LIMIT + 1) > SPARSE_LIMIT
    )
    if alone and f.q.isascii() and common:
        return _search_match(conn, f, dense=exact, exact=exact)
    condition = sender_queries.where(f, search_by_row=common)
    first = select(_S.id, _S.mails_sent).where(condition).limit(SPARSE_LIMIT + 1).subquery()
    count, messages, ids = conn.execute(
        select(func.count(), func.coalesce(func.sum(first.c.mails_sent), 0), func.json_group_array(first.c.id))
    ).one()
    if count <= SPARSE_LIMIT:
        return Match(int(count), int(messages), str(ids))
    if not exact:
        return CAPPED
    total, messages = _sums(conn, condition)
    return Match(total, messages, None)


def _search_match(conn: Connection, f: SenderFilter, *, dense: bool, exact: bool) -> Match:
    """A search tested on every sender, read from the covering index `ix_senders_search` in one pass: a count alone
    when the matches are likely many (`dense`: a sample said so, or the trigram index), else the ids of the first
    SPARSE_LIMIT + 1 in key order and, when there turn out to be more, a count that goes on from the last key (no
    key is read twice). A wrong guess costs one more pass, never a wrong answer. Hidden senders are not tested on
    each key: those that match are taken away (so a count that stops at the limit stops only when none match)."""
    like = sender_queries.key_like(f.q)
    hidden = and_(like, in_values(_S.sender, f.exclude))
    if dense:
        count, messages = _sums(conn, like)
        kept = None
        if count <= SPARSE_LIMIT:
            kept = str(conn.execute(select(func.json_group_array(_S.id)).where(like)).scalar_one())
    else:
        first = (
            select(_S.search_key, _S.id, _S.mails_sent)
            .where(like)
            .order_by(_S.search_key)
            .limit(SPARSE_LIMIT + 1)
            .subquery()
        )
        count, messages, ids, last = conn.execute(
            select(
                func.count(),
                func.coalesce(func.sum(first.c.mails_sent), 0),
                func.json_group_array(first.c.id),
                func.max(first.c.search_key),
            )
        ).one()
        kept = str(ids)
        if count > SPARSE_LIMIT and not exact and (not f.exclude or _sums(conn, hidden)[0] == 0):
            return CAPPED
        if count > SPARSE_LIMIT:
            if _sums(conn, _S.search_key == last)[0] == 1:
                more, more_messages = _sums(conn, like, _S.search_key > last)
                count, messages = count + more, messages + more_messages
            else:  # a key shared by two senders (only if an address held a newline) may straddle the cut
                count, messages = _sums(conn, like)
            kept = None
    if f.exclude:
        hidden_count, hidden_messages = _sums(conn, hidden)
        count, messages = count - hidden_count, messages - hidden_messages
        if kept is not None and hidden_count:
            each = func.json_each(kept).table_valued("value").alias("kept")
            kept = str(
                conn.execute(
                    select(func.json_group_array(each.c.value)).where(each.c.value.not_in(select(_S.id).where(hidden)))
                ).scalar_one()
            )
    return Match(int(count), int(messages), kept)


def _looks_dense(conn: Connection, like: ColumnElement[bool]) -> bool:
    """True when the oldest SAMPLE senders (by id, a rowid range) match at a rate that makes more than SPARSE_LIMIT
    of all of them (the highest id stands for how many there are). A guess: never decides an answer, only the order
    of the passes that find it. Only for searches too short for the trigram index, whose bounded count is exact:
    a wrong guess costs them one pass over a small index, while a preset's second pass may read every row, and the
    oldest senders are no fair sample of every filter (they are often the busiest)."""
    highest = select(func.max(_S.id)).scalar_subquery()
    sampled, matched, population = conn.execute(
        select(func.count(), func.count().filter(like), highest).where(_S.id <= SAMPLE)
    ).one()
    return bool(sampled) and matched * (population or 0) > SPARSE_LIMIT * sampled


def _sums(conn: Connection, *conditions: ColumnElement[bool]) -> tuple[int, int]:
    """(senders, messages) matching every condition."""
    count, messages = conn.execute(
        select(func.count(), func.coalesce(func.sum(_S.mails_sent), 0)).where(*conditions)
    ).one()
    return int(count), int(messages)
