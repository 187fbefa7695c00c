"""Counting a batch so that one record the database refuses cannot sink the others: the batch is bisected.

A refusal that depends on a record's values (text SQLite cannot encode, an integer it cannot bind) splits the
batch in savepoints until that record stands alone; it is handed back as rejected and everything else counts.
Failures of the database itself (`OperationalError`: locked, full, corrupt) are nobody's record and propagate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from ingester.records import MailRecord
from ingester.store.store import BatchOutcome, count_batch
from shared.schema.models import Source

# Errors that one record's values can provoke. `UnicodeEncodeError` (a lone surrogate) and `OverflowError` (an
# integer past 64 bits) come from the driver's binding unwrapped; its own errors arrive as `DBAPIError`.
_RECORD_ERRORS = (UnicodeError, ValueError, OverflowError, TypeError, DBAPIError)
# More refused records than this in one batch is not a few hostile messages but a fault of ours or the
# database's: the first error is raised instead of skipping the whole file one record at a time.
MAX_REJECTED = 100


@dataclass(frozen=True, slots=True)
class Rejected:
    """The record at `index` of the batch could not be stored; `reason` is the error in one line."""

    index: int
    reason: str


class _TooManyRejected(Exception):
    pass


def count_batch_guarded(
    conn: Connection, records: Sequence[MailRecord], *, source: Source, run_id: int
) -> tuple[BatchOutcome, list[Rejected]]:
    """`count_batch`, except that records the database refuses are left out and returned as `Rejected`.

    A batch that stores cleanly costs one savepoint more than `count_batch`; each refused record costs about
    two more passes over the batch (each level of the bisection re-counts only the half that failed).
    """
    rejected: list[Rejected] = []
    try:
        outcome = _count(conn, records, 0, source=source, run_id=run_id, rejected=rejected)
    except _TooManyRejected as exc:
        raise exc.__cause__ or exc from None
    return outcome, rejected


def _count(
    conn: Connection,
    records: Sequence[MailRecord],
    offset: int,
    *,
    source: Source,
    run_id: int,
    rejected: list[Rejected],
) -> BatchOutcome:
    if not records:
        return BatchOutcome(0, 0)
    savepoint = conn.begin_nested()
    try:
        outcome = count_batch(conn, records, source=source, run_id=run_id)
    except _RECORD_ERRORS as exc:
        savepoint.rollback()
        if isinstance(exc, OperationalError):
            raise
        if len(records) == 1:
            rejected.append(Rejected(offset, _one_line(exc)))
            if len(rejected) > MAX_REJECTED:
                raise _TooManyRejected() from exc
            return BatchOutcome(0, 0)
        half = len(records) // 2
        first = _count(conn, records[:half], offset, source=source, run_id=run_id, rejected=rejected)
        second = _count(conn, records[half:], offset + half, source=source, run_id=run_id, rejected=rejected)
        return BatchOutcome(first.new + second.new, first.duplicates + second.duplicates)
    savepoint.commit()
    return outcome


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"
