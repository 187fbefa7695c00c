"""The senders list: filters, sorts and paging over `senders`, each sort walking its own index.

Read-only. A search of three characters or more reads the FTS5 trigram index
`sender_search`, so even a search that matches nothing costs an index lookup, not a table scan; a shorter one, or a
common one, is a `LIKE` on each row's `search_key`. A narrowing filter is counted by `viewer.query.filter_match` (once
per generation, in the one cache) and paged from what it found.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    and_,
    column,
    func,
    literal_column,
    not_,
    or_,
    select,
    text,
    true,
)

from shared.schema.models import sender_months, senders
from shared.sender_list import LIST_COLUMNS, UNREAD_RATIO, SenderListRow, chosen, iter_rows, row_of
from viewer.query.filters import SenderFilter
from viewer.query.sql_lists import contains, in_values

if TYPE_CHECKING:
    from viewer.query.filter_match import Match

_S = senders.c
# Spelled exactly as the expression index `ix_senders_name` (shared.schema.models).
NAME: ColumnElement[str] = literal_column("(lower(coalesce(nullif(senders.display_name, ''), senders.sender)))")


class SortKey(StrEnum):
    MAILS_SENT = "mails_sent"
    SENDER = "sender"  # the address
    NAME = "name"  # what the row shows: the display name, or the address when there is none
    LAST_SEEN = "last_seen"
    FIRST_SEEN = "first_seen"
    BYTES = "bytes"
    UNREAD_RATIO = "unread_ratio"
    UNREAD = "unread"  # the unread count (no index of its own: a sort of the matches)


class SortOrder(StrEnum):
    DESC = "desc"
    ASC = "asc"


def fts_phrase(q: str) -> str:
    """The search text as one FTS5 phrase: quotes doubled, so no query syntax gets through."""
    return '"' + q.replace('"', '""') + '"'


_IN_INDEX = "SELECT rowid FROM sender_search WHERE sender_search MATCH :phrase"  # the senders a phrase matches


def uses_trigrams(q: str) -> bool:
    return len(q) >= 3  # the trigram index holds no shorter search


def trigram_hits(conn: Connection, q: str, *, up_to: int) -> int:
    """How many senders (counting no further than `up_to`) the trigram index matches for `q`: its own doclists
    only, no row is read."""
    bounded = text(f"SELECT count(*) FROM ({_IN_INDEX} LIMIT :n)")
    return int(conn.execute(bounded, {"phrase": fts_phrase(q), "n": up_to}).scalar_one())


def key_like(q: str) -> ColumnElement[bool]:
    """`q` anywhere in the address or the name, as `LIKE` means it: one `LIKE` on `search_key` (address, newline,
    name), which `ix_senders_search` covers. A search holding a newline could match across the two, so it tests
    each instead."""
    if "\n" in q:
        return or_(contains(_S.sender, q), contains(_S.display_name, q))
    return contains(_S.search_key, q)


def _search(q: str, *, dense: bool) -> ColumnElement[bool]:
    """A case-insensitive substring of the address or the name.

    ASCII searches mean what `LIKE` means at any length: from three characters the trigram index narrows and `LIKE`
    decides (the index alone would also fold KELVIN SIGN and LONG S into k and s). `dense`: `LIKE` alone, tested
    row by row, for a common search whose index answer would list most senders. A search with other characters
    keeps the index's Unicode case folding, which `LIKE` lacks.
    """
    if not uses_trigrams(q) or (dense and q.isascii()):
        return key_like(q)
    in_index = _S.id.in_(text(_IN_INDEX).bindparams(phrase=fts_phrase(q)).columns(column("rowid", Integer)))
    if not q.isascii():
        return in_index
    return and_(in_index, key_like(q))


def where(f: SenderFilter, *, search_by_row: bool = False) -> ColumnElement[bool]:
    """The filter as SQL; `search_by_row`: a common search as a test of each row (see `_search`), for a scan or a
    page that walks a sort's index. The other terms stay open to their indexes: SQLite weighs a filter's index
    range against walking the sort's index (mostly-unread senders, for one, are found at the far end of a walk by
    mail count)."""
    parts: list[ColumnElement[bool]] = []
    if f.q:
        parts.append(_search(f.q, dense=search_by_row))
    if f.domain is not None:
        parts.append(_S.domain == f.domain)
    if f.min_messages > 1:
        parts.append(_S.mails_sent >= f.min_messages)
    if f.min_unread_ratio > 0:
        parts.append(f.min_unread_ratio <= UNREAD_RATIO)
    if f.has_unsubscribe is not None:
        known = or_(_S.unsubscribe_web.is_not(None), _S.unsubscribe_mailto.is_not(None))
        parts.append(known if f.has_unsubscribe else not_(known))
    if f.exclude:
        parts.append(not_(in_values(_S.sender, f.exclude)))
    parts.extend(chosen(f.choice))  # the date and size terms, `gmail-stats export`'s too
    if f.month is not None:
        parts.append(_S.sender.in_(select(sender_months.c.sender).where(sender_months.c.month == f.month)))
    return and_(true(), *parts)


_SORT_COLUMNS: dict[SortKey, Any] = {
    SortKey.MAILS_SENT: _S.mails_sent,
    SortKey.SENDER: _S.sender,
    SortKey.NAME: NAME,
    SortKey.LAST_SEEN: _S.last_seen_unix,
    SortKey.FIRST_SEEN: _S.first_seen_unix,
    SortKey.BYTES: _S.bytes,
    SortKey.UNREAD_RATIO: UNREAD_RATIO,
    SortKey.UNREAD: _S.unread,
}


def order_by(sort: SortKey, order: SortOrder) -> list[Any]:
    desc = order is SortOrder.DESC
    return index_order(_SORT_COLUMNS[sort], _S.sender, desc=desc, ties_opposite=sort is SortKey.MAILS_SENT)


def index_order(value: Any, key: Any, *, desc: bool, ties_opposite: bool) -> list[Any]:
    """`value`, then the unique `key` for ties (nothing more when `value` is `key`), as one index serves both
    directions: ascending is the exact reverse of descending, tie-break included.

    The mail-count indexes are `(mails_sent DESC, key)`: ties A→Z when descending (`ties_opposite`). The others are
    `(value, key)`: ties run the same way as the value, so a walk of the index in either direction is the whole
    order (a tie-break the other way makes SQLite sort every run of equal values, e.g. the many senders whose mail
    is all unread).
    """
    terms = [value.desc() if desc else value.asc()]
    if value is not key:
        terms.append(key.desc() if desc != ties_opposite else key.asc())
    return terms


def senders_page(
    conn: Connection, *, f: SenderFilter, sort: SortKey, order: SortOrder, offset: int, limit: int, counted: Match
) -> list[SenderListRow]:
    """One page. `counted`: what `filter_match.match` found for a narrowing filter, or, when nothing narrows, the
    table's totals less hidden senders (no ids)."""
    if counted.total == 0:
        return []
    stmt = select(*LIST_COLUMNS)
    if counted.ids is None:  # many: walk the sort's index, testing each row
        stmt = stmt.where(where(f, search_by_row=True))
    else:  # few: look those rows up by id and sort just them, never walk an index looking for them
        ids = func.json_each(counted.ids).table_valued("value").alias("matched")
        stmt = stmt.select_from(ids).join(senders, _S.id == ids.c.value)
    stmt = stmt.order_by(*order_by(sort, order)).limit(limit).offset(offset)
    return [row_of(r) for r in conn.execute(stmt)]


def top_sender(conn: Connection, *, exclude: tuple[str, ...]) -> SenderListRow | None:
    found = conn.execute(
        select(*LIST_COLUMNS)
        .where(where(SenderFilter(exclude=exclude)))
        .order_by(*order_by(SortKey.MAILS_SENT, SortOrder.DESC))
        .limit(1)
    ).first()
    return row_of(found) if found is not None else None


def iter_senders(conn: Connection, *, f: SenderFilter, sort: SortKey, order: SortOrder) -> Iterator[SenderListRow]:
    """Every matching sender in page order, fetched in chunks so a 200k-sender export streams in flat memory."""
    yield from iter_rows(conn, select(*LIST_COLUMNS).where(where(f)).order_by(*order_by(sort, order)))
