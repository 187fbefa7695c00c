"""Senders as the page lists them and both CSV exports write them: one row shape, read by one SELECT list.

The viewer pages, sorts and filters these rows (`viewer.query.sender_queries`); `gmail-stats export --format csv`
and `/api/export.csv` write them through `shared.text.csv_cells.sender_csv_row`, so the two files are one format.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, func, literal_column, select

from shared.actions.gmail_search import search_query, search_url, searchable
from shared.schema.models import senders
from shared.text.unsubscribe_links import clean_target

_S = senders.c
# Spelled exactly as the expression index `ix_senders_unread_ratio` (shared.schema.models).
UNREAD_RATIO: ColumnElement[float] = literal_column("(CAST(senders.unread AS REAL) / max(senders.mails_sent, 1))")
_CHUNK = 2000


@dataclass(frozen=True, slots=True)
class SenderListRow:
    sender: str
    display_name: str
    domain: str
    mails_sent: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    bytes: int
    unread: int
    unread_ratio: float
    list_unsubscribe: int
    unsubscribe_url: str | None  # the HTTPS (or HTTP) target when known, else the mailto
    one_click: bool
    gmail_url: str


def gmail_search_url(sender: str) -> str:
    """A Gmail web search for one sender or domain, escaped by `shared.actions.gmail_search` (the page only links to it;
    the viewer never contacts Google or senders). The page moves it to the person's account (`authuser=`)."""
    return search_url(search_query([sender])) if searchable(sender) else search_url("from:")


LIST_COLUMNS = (
    _S.sender,
    _S.display_name,
    _S.domain,
    _S.mails_sent,
    _S.first_seen_unix,
    _S.last_seen_unix,
    _S.bytes,
    _S.unread,
    UNREAD_RATIO,
    _S.list_unsubscribe,
    func.coalesce(_S.unsubscribe_web, _S.unsubscribe_mailto),
    _S.one_click,
)


def row_of(v: Any) -> SenderListRow:
    """A `LIST_COLUMNS` result row as a `SenderListRow`."""
    return SenderListRow(
        sender=v[0],
        display_name=v[1],
        domain=v[2],
        mails_sent=v[3],
        first_seen_unix=v[4],
        last_seen_unix=v[5],
        bytes=v[6],
        unread=v[7],
        unread_ratio=round(float(v[8]), 4),
        list_unsubscribe=v[9],
        unsubscribe_url=clean_target(v[10]),  # also a mailto stored before its parameters were dropped
        one_click=bool(v[11]),
        gmail_url=gmail_search_url(v[0]),
    )


def iter_rows(conn: Connection, stmt: Select[Any]) -> Iterator[SenderListRow]:
    """The rows of a `LIST_COLUMNS` statement, fetched in chunks so 200k senders stream in flat memory."""
    result = conn.execution_options(yield_per=_CHUNK).execute(stmt)
    for partition in result.partitions():
        yield from (row_of(r) for r in partition)


@dataclass(frozen=True, slots=True)
class SenderChoice:
    """The date and size filters of `gmail-stats export` and of the viewer (`SenderFilter.choice`, from its
    `last_before` … `min_avg_bytes` parameters), in UTC unix seconds and bytes."""

    last_before: int | None = None
    last_after: int | None = None
    first_before: int | None = None
    first_after: int | None = None
    min_bytes: int = 0
    min_avg_bytes: int = 0


def chosen(c: SenderChoice) -> list[ColumnElement[bool]]:
    """The choice as SQL, for the CLI export and the viewer's filter (`viewer.query.sender_queries`) alike: before is
    strictly before, after is on or after; a sender with no dated mail has no first or last date."""
    terms: list[ColumnElement[bool]] = []
    if c.last_before is not None:
        terms.append(_S.last_seen_unix < c.last_before)
    if c.last_after is not None:
        terms.append(_S.last_seen_unix >= c.last_after)
    if c.first_before is not None:
        terms.append(_S.first_seen_unix < c.first_before)
    if c.first_after is not None:
        terms.append(_S.first_seen_unix >= c.first_after)
    if c.min_bytes > 0:
        terms.append(_S.bytes >= c.min_bytes)
    if c.min_avg_bytes > 0:  # bytes / mails >= n, kept in integers: bytes >= n * mails
        # Both columns are in `ix_senders_mails_sent` (as are the dates): a count or a page's walk reads no row.
        terms.append(and_(_S.mails_sent > 0, _S.bytes >= _S.mails_sent * c.min_avg_bytes))
    return terms


def every_sender(conn: Connection, choice: SenderChoice | None = None) -> Iterator[SenderListRow]:
    """Every sender (or those `choice` keeps), most mail first, ties by sender key (the page's default order, and
    `export`'s)."""
    stmt = select(*LIST_COLUMNS).order_by(_S.mails_sent.desc(), _S.sender.asc())
    if choice is not None:
        stmt = stmt.where(*chosen(choice))
    yield from iter_rows(conn, stmt)
