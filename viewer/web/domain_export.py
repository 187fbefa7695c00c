"""`/api/domains.csv`: the Domains view as CSV, every domain the page lists (its search, hidden senders left out,
its sort), written completely before the answer starts, in the sender export's format (`viewer.web.export`)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from sqlalchemy import Connection

from shared.text.csv_cells import iso_date, neutralise_row
from viewer.query.database import Snapshot
from viewer.query.rollup_queries import DomainRow, DomainSort
from viewer.query.sender_queries import SortOrder
from viewer.web.api import domain_page
from viewer.web.deps import FilterDep, StateDep
from viewer.web.export import csv_download
from viewer.web.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/api", responses=ERROR_RESPONSES)

# `DomainRow`'s fields in the CSV's order; a date (`*_unix`) is written in ISO 8601, its column named without `_unix`.
DOMAIN_FIELDS = (
    "domain",
    "senders",
    "mails_sent",
    "unread",
    "unread_ratio",
    "bytes",
    "first_seen_unix",
    "last_seen_unix",
    "list_unsubscribe",
    "gmail_url",
)
DOMAIN_CSV_COLUMNS = tuple(name.removesuffix("_unix") for name in DOMAIN_FIELDS)
_EVERY = 2**31  # "every domain" as a page size: more than a mailbox holds


def domain_csv_row(row: DomainRow) -> list[object]:
    """One domain's cells, text that would start a formula neutralised (`shared.text.csv_cells`)."""
    cells = ((name, getattr(row, name)) for name in DOMAIN_FIELDS)
    return neutralise_row(iso_date(value) if name.endswith("_unix") else value for name, value in cells)


@router.get(
    "/domains.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "matching domains"}},
)
def export_domains_csv(
    state: StateDep, f: FilterDep, sort: DomainSort = DomainSort.MAILS_SENT, order: SortOrder = SortOrder.DESC
) -> StreamingResponse:
    """The domains `/api/domains` lists for `q` and hidden senders, in its sort, every page at once; dates in ISO
    8601 (UTC). The other sender filters do not apply to a whole domain, as on `/api/domains`."""
    database = state.database

    def rows(conn: Connection, snap: Snapshot) -> Iterator[list[object]]:
        page = domain_page(conn, snap, database.cache, f, sort=sort, order=order, offset=0, limit=_EVERY)
        return (domain_csv_row(d) for d in page.domains)

    return csv_download(database, DOMAIN_CSV_COLUMNS, rows, filename="gmail-stats-domains.csv")
