"""`/api/export.csv`'s body: every sender as CSV, written completely before the answer starts.

A database error half-way through must become a 503, never a 200 whose body stops early; so the CSV is built
into a spooled file (memory up to a bound, then a temporary file) from one SELECT, then streamed.
"""

from __future__ import annotations

import csv
import io
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import IO

from shared.summary import SENDER_COLUMNS
from viewer import queries
from viewer.database import Database
from viewer.errors import ApiError
from viewer.queries import DbState

log = logging.getLogger("viewer")

# Kept in memory up to this size (about 100k senders), then spilled to a temporary file.
MEMORY_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class CsvBody:
    file: IO[bytes]
    size: int

    def chunks(self) -> Iterator[bytes]:
        """The whole body in chunks, then the spooled file closed (also if the client goes away)."""
        try:
            self.file.seek(0)
            while chunk := self.file.read(CHUNK_BYTES):
                yield chunk
        finally:
            self.file.close()


def build_csv(database: Database) -> CsvBody:
    spool = tempfile.SpooledTemporaryFile(max_size=MEMORY_BYTES)  # noqa: SIM115 - closed by `CsvBody.chunks`
    try:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(SENDER_COLUMNS)
        if database.exists():
            with database.connect() as conn:
                # One SELECT, so one snapshot of the table even while an ingester commits (WAL).
                if database.require_ready(conn).state is DbState.READY:
                    for sender in queries.iter_all_senders(conn):
                        writer.writerow(asdict(sender).values())
        text.flush()
        size = spool.tell()
        text.detach()
    except OSError as exc:
        spool.close()
        log.error("export.csv could not be built: %r", exc)
        raise ApiError(503, "export_failed", "the export could not be prepared (no room for it); try again") from exc
    except BaseException:
        spool.close()
        raise
    return CsvBody(file=spool, size=size)
