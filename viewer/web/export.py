"""The CSV exports and their one writer: `/api/export.csv` (the filtered senders, as the page lists them) and
`/api/domains.csv` (the Domains view, as it lists them); and how every file route is declared in the OpenAPI.

A database error half-way through must become a 503, never a 200 whose body stops early; so each CSV is built
into a spooled file (memory up to a bound, then a temporary file) inside one read transaction, then streamed.
"""

from __future__ import annotations

import csv
import io
import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from sqlalchemy import Connection

from shared.errors import ErrorKind
from shared.text.csv_cells import SENDER_CSV_COLUMNS, iso_date, neutralise_row, sender_csv_row
from viewer.errors import ApiError
from viewer.query.database import Database, Snapshot
from viewer.query.queries import DbState
from viewer.query.rollup_queries import DomainRow, DomainSort
from viewer.query.sender_queries import SortKey, SortOrder, iter_senders
from viewer.web.answers import generation_headers
from viewer.web.api import domain_page
from viewer.web.deps import FilterDep, StateDep

log = logging.getLogger("viewer")
router = APIRouter(prefix="/api")

# Kept in memory up to this size (about 10k senders), then spilled to a temporary file: at 8 MiB the export of
# 200,000 senders raised the viewer's peak RSS by 24 MB (bench/README.md), past its 120 MB budget.
MEMORY_BYTES = 1024 * 1024
CHUNK_BYTES = 64 * 1024

# An export's rows (CSV cells), read on the connection of a ready snapshot.
Rows = Callable[[Connection, Snapshot], Iterable[Iterable[object]]]


def download(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI answer of a file route: a text body of `media_type`, where FastAPI would say JSON."""
    return {200: {"content": {media_type: {"schema": {"type": "string"}}}, "description": description}}


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    """The whole file in chunks, then closed (also if the client goes away)."""
    try:
        spool.seek(0)
        while chunk := spool.read(CHUNK_BYTES):
            yield chunk
    finally:
        spool.close()


def csv_download(database: Database, header: Sequence[str], rows: Rows, *, filename: str) -> StreamingResponse:
    """`header`, then the `rows` of one snapshot (none while the database is missing or not ready), written
    completely, then sent labelled with the generation it was read from; no room for the file is a 503."""
    spool = tempfile.SpooledTemporaryFile(max_size=MEMORY_BYTES)  # noqa: SIM115 - closed by `_chunks`
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(header)
        generation = None
        # One read transaction, so one snapshot of the table even while an ingester commits (WAL).
        with database.read_snapshot() as read:
            if read is not None:
                conn, snap = read
                generation = snap.generation
                if snap.state is DbState.READY:
                    writer.writerows(rows(conn, snap))
        text.detach()  # flushes the wrapper and leaves the spool open for `_chunks`
        size = spool.tell()
    except OSError as exc:
        spool.close()
        log.error("%s could not be built: %r", filename, exc)
        raise ApiError(
            503, ErrorKind.EXPORT_FAILED, "the export could not be prepared (no room for it); try again"
        ) from exc
    except BaseException:
        spool.close()
        raise
    return StreamingResponse(
        _chunks(spool),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Content-Length": str(size),
            **generation_headers(generation),
        },
    )


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


@router.get("/export.csv", response_class=StreamingResponse, responses=download("text/csv", "matching senders"))
def export_csv(
    state: StateDep,
    f: FilterDep,
    sort: SortKey = SortKey.MAILS_SENT,
    order: SortOrder = SortOrder.DESC,
) -> StreamingResponse:
    """The senders the page shows with the same filters and sort, every page at once; dates in ISO 8601 (UTC)."""

    def rows(conn: Connection, snap: Snapshot) -> Iterator[list[object]]:
        return (sender_csv_row(sender) for sender in iter_senders(conn, f=f, sort=sort, order=order))

    return csv_download(state.database, SENDER_CSV_COLUMNS, rows, filename="gmail-stats-senders.csv")


@router.get("/domains.csv", response_class=StreamingResponse, responses=download("text/csv", "matching domains"))
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
