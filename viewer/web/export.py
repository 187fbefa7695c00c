"""The CSV exports' one writer: `/api/export.csv` (the filtered senders) and `/api/domains.csv` (`domain_export`).

A database error half-way through must become a 503, never a 200 whose body stops early; so each CSV is built
into a spooled file (memory up to a bound, then a temporary file) inside one read transaction, then streamed.
"""

from __future__ import annotations

import csv
import io
import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO

from fastapi.responses import StreamingResponse
from sqlalchemy import Connection

from shared.errors import ErrorKind
from shared.text.csv_cells import SENDER_CSV_COLUMNS, sender_csv_row
from viewer.errors import ApiError
from viewer.query.database import Database, Snapshot
from viewer.query.filters import SenderFilter
from viewer.query.queries import DbState
from viewer.query.sender_queries import SortKey, SortOrder, iter_senders
from viewer.web.answers import generation_headers

log = logging.getLogger("viewer")

# Kept in memory up to this size (about 10k senders), then spilled to a temporary file: at 8 MiB the export of
# 200,000 senders raised the viewer's peak RSS by 24 MB (bench/README.md), past its 120 MB budget.
MEMORY_BYTES = 1024 * 1024
CHUNK_BYTES = 64 * 1024

# An export's rows (CSV cells), read on the connection of a ready snapshot.
Rows = Callable[[Connection, Snapshot], Iterable[Iterable[object]]]


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
        if database.exists():
            with database.connect() as conn:
                # One read transaction, so one snapshot of the table even while an ingester commits (WAL).
                snap = database.require_ready(conn)
                generation = snap.generation
                if snap.state is DbState.READY:
                    writer.writerows(rows(conn, snap))
        text.flush()
        size = spool.tell()
        text.detach()
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


def senders_csv(database: Database, *, f: SenderFilter, sort: SortKey, order: SortOrder) -> StreamingResponse:
    """The senders matching `f` in the page's order (hidden ones left out), as the page would list them."""

    def rows(conn: Connection, snap: Snapshot) -> Iterator[list[object]]:
        return (sender_csv_row(sender) for sender in iter_senders(conn, f=f, sort=sort, order=order))

    return csv_download(database, SENDER_CSV_COLUMNS, rows, filename="gmail-stats-senders.csv")
