"""`/api/export.csv`'s body: the filtered senders as CSV, written completely before the answer starts.

A database error half-way through must become a 503, never a 200 whose body stops early; so the CSV is built
into a spooled file (memory up to a bound, then a temporary file) from one SELECT, then streamed.
"""

from __future__ import annotations

import csv
import io
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from shared.errors import ErrorKind
from shared.text.csv_cells import SENDER_CSV_COLUMNS, sender_csv_row
from viewer.errors import ApiError
from viewer.query.database import Database
from viewer.query.filters import SenderFilter
from viewer.query.queries import DbState, Generation
from viewer.query.sender_queries import SortKey, SortOrder, iter_senders

log = logging.getLogger("viewer")

# Kept in memory up to this size (about 100k senders), then spilled to a temporary file.
MEMORY_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class CsvBody:
    file: IO[bytes]
    size: int
    generation: Generation | None  # the snapshot it was read from

    def chunks(self) -> Iterator[bytes]:
        """The whole body in chunks, then the spooled file closed (also if the client goes away)."""
        try:
            self.file.seek(0)
            while chunk := self.file.read(CHUNK_BYTES):
                yield chunk
        finally:
            self.file.close()


def build_csv(database: Database, *, f: SenderFilter, sort: SortKey, order: SortOrder) -> CsvBody:
    """The senders matching `f` in the page's order (hidden ones left out), as the page would list them."""
    spool = tempfile.SpooledTemporaryFile(max_size=MEMORY_BYTES)  # noqa: SIM115 - closed by `CsvBody.chunks`
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(SENDER_CSV_COLUMNS)
        generation = None
        if database.exists():
            with database.connect() as conn:
                # One read transaction, so one snapshot of the table even while an ingester commits (WAL).
                snap = database.require_ready(conn)
                generation = snap.generation
                if snap.state is DbState.READY:
                    for sender in iter_senders(conn, f=f, sort=sort, order=order):
                        writer.writerow(sender_csv_row(sender))
        text.flush()
        size = spool.tell()
        text.detach()
    except OSError as exc:
        spool.close()
        log.error("export.csv could not be built: %r", exc)
        raise ApiError(
            503, ErrorKind.EXPORT_FAILED, "the export could not be prepared (no room for it); try again"
        ) from exc
    except BaseException:
        spool.close()
        raise
    return CsvBody(file=spool, size=size, generation=generation)
