"""What every page reads first: the schema's state, the whole-mailbox facts and the generation, on a read-only
`Connection` (`viewer.query.database` reads them once per request). Nothing here writes or runs DDL."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import Connection, func, literal, select

from shared.schema.migration_generation import READ_SQL
from shared.schema.migrations import LATEST_VERSION, schema_version
from shared.schema.models import Source, domains, ingest_runs, seen_mails

Generation = tuple[str, int]  # (the file's epoch, its generation): the one cache's key


class DbState(StrEnum):
    MISSING = "missing"  # no file yet: onboarding
    EMPTY = "empty"  # a file, but no senders yet (or no tables): onboarding
    OUTDATED = "outdated"  # an older schema (e.g. the Rust tool's): the next ingester run upgrades it
    TOO_NEW = "too_new"  # written by a newer gmail-stats: refuse to read it
    READY = "ready"


@dataclass(frozen=True, slots=True)
class Totals:
    senders: int
    messages: int
    domains: int


@dataclass(frozen=True, slots=True)
class SourceMix:
    """Scan rows without a Message-ID can double-count mail that an import also counted, until a backfill."""

    mixed_sources: bool
    unrepaired_count: int


def schema_state(conn: Connection) -> DbState:
    version = schema_version(conn)
    if version > LATEST_VERSION:
        return DbState.TOO_NEW
    if version < LATEST_VERSION:
        has_tables = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('senders', 'ingest_runs')"
        ).scalar_one()
        return DbState.OUTDATED if has_tables else DbState.EMPTY
    return DbState.READY


def totals(conn: Connection) -> Totals:
    """Whole-mailbox sums from the per-domain rollup (far fewer rows than `senders`)."""
    d = domains.c
    count, messages, domain_count = conn.execute(
        select(func.coalesce(func.sum(d.senders), 0), func.coalesce(func.sum(d.mails_sent), 0), func.count())
    ).one()
    return Totals(senders=int(count), messages=int(messages), domains=int(domain_count))


def has_senders(conn: Connection) -> bool:
    """Whether `totals` would count any sender, read from one rollup row instead of the sums."""
    d = domains.c
    return conn.execute(select(literal(1)).select_from(domains).where(d.senders > 0).limit(1)).first() is not None


def source_mix(conn: Connection) -> SourceMix:
    """Counts scan rows lacking a Message-ID (served by the `rfc_message_id` index), and whether mbox data exists."""
    seen, runs = seen_mails.c, ingest_runs.c
    unrepaired = conn.execute(
        select(func.count()).where(seen.rfc_message_id.is_(None), seen.source == str(Source.GMAIL_API))
    ).scalar_one()
    if unrepaired == 0:
        return SourceMix(mixed_sources=False, unrepaired_count=0)
    imported = conn.execute(select(literal(1)).where(runs.source == str(Source.MBOX)).limit(1)).first()
    return SourceMix(mixed_sources=imported is not None, unrepaired_count=int(unrepaired))


def generation(conn: Connection) -> Generation | None:
    """The file's epoch and generation (`shared.schema.migration_generation`); None before that step."""
    row = conn.exec_driver_sql(READ_SQL).first()
    return (str(row[0]), int(row[1])) if row is not None else None
