"""Ordered schema steps keyed on `PRAGMA user_version`; each commits with its version bump or not at all.

Only the ingester calls `migrate`; the viewer only reads `schema_version` and refuses a too-new file.
Steps are frozen history: never edit a released step, add a new one. The current shape is `shared.schema.models`; a test
migrates from every older version and compares the result with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from shared.db import enable_wal
from shared.errors import SchemaTooNewError
from shared.schema.legacy import is_rust_era, upgrade_rust_era
from shared.schema.migration_generation import add_generation
from shared.schema.migration_rollups import add_rollups
from shared.schema.migration_sample import add_scan_sample
from shared.schema.migration_search import add_search_key


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _create_ingest_runs(conn: Connection) -> None:
    conn.exec_driver_sql(
        """
        CREATE TABLE IF NOT EXISTS ingest_runs (
            run_id INTEGER PRIMARY KEY AUTOINCREMENT,
            source TEXT NOT NULL,
            state TEXT NOT NULL,
            pid INTEGER,
            started_at_unix INTEGER NOT NULL,
            updated_at_unix INTEGER NOT NULL,
            finished_at_unix INTEGER,
            messages_seen INTEGER NOT NULL DEFAULT 0,
            messages_new INTEGER NOT NULL DEFAULT 0,
            messages_skipped INTEGER NOT NULL DEFAULT 0,
            messages_excluded INTEGER NOT NULL DEFAULT 0,
            total_estimate INTEGER,
            bytes_total INTEGER,
            bytes_done INTEGER NOT NULL DEFAULT 0,
            resume_token TEXT,
            mbox_path TEXT,
            mbox_fingerprint TEXT,
            error_kind TEXT,
            error TEXT,
            auth_url TEXT,
            warnings_count INTEGER NOT NULL DEFAULT 0,
            warnings_tail TEXT NOT NULL DEFAULT '[]',
            outcome TEXT
        )
        """
    )
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_ingest_runs_state ON ingest_runs (state)")


def _create_counts(conn: Connection) -> None:
    conn.exec_driver_sql(
        """
        CREATE TABLE IF NOT EXISTS senders (
            sender TEXT PRIMARY KEY NOT NULL,
            display_name TEXT NOT NULL DEFAULT '',
            display_name_unix INTEGER,
            mails_sent INTEGER NOT NULL DEFAULT 0,
            first_seen_unix INTEGER,
            last_seen_unix INTEGER,
            bytes INTEGER NOT NULL DEFAULT 0,
            unread INTEGER NOT NULL DEFAULT 0,
            list_unsubscribe INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_senders_mails_sent ON senders (mails_sent DESC, sender)")
    conn.exec_driver_sql(
        """
        CREATE TABLE IF NOT EXISTS seen_mails (
            id INTEGER PRIMARY KEY,
            mail_id TEXT NOT NULL UNIQUE,
            rfc_message_id TEXT,
            gmail_id TEXT,
            sender TEXT NOT NULL DEFAULT '',
            date_unix INTEGER,
            size_bytes INTEGER NOT NULL DEFAULT 0,
            labels TEXT NOT NULL DEFAULT '',
            unread INTEGER NOT NULL DEFAULT 0,
            list_unsubscribe INTEGER NOT NULL DEFAULT 0,
            source TEXT NOT NULL,
            run_id INTEGER,
            counted INTEGER NOT NULL DEFAULT 1
        )
        """
    )
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_seen_mails_rfc_message_id ON seen_mails (rfc_message_id)")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_seen_mails_gmail_id ON seen_mails (gmail_id)")
    conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS sync_state (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")


def _add_launch_token(conn: Connection) -> None:
    # Set by whoever launched the ingester (the viewer), so it can find the run row of its own launch.
    conn.exec_driver_sql("ALTER TABLE ingest_runs ADD COLUMN launch_token TEXT")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_ingest_runs_launch_token ON ingest_runs (launch_token)")


def _create_scan_tables(conn: Connection) -> None:
    # Gmail ids a scan could not fetch within its retry budget; the next scan fetches them first.
    conn.exec_driver_sql(
        "CREATE TABLE IF NOT EXISTS gmail_retry (gmail_id TEXT PRIMARY KEY NOT NULL, run_id INTEGER,"
        " reason TEXT NOT NULL DEFAULT '')"
    )
    # Scan rows the Message-ID backfill has settled: 'found', 'none' (no Message-ID header) or 'gone' (404).
    conn.exec_driver_sql(
        "CREATE TABLE IF NOT EXISTS backfill_checked (mail_id TEXT PRIMARY KEY NOT NULL, status TEXT NOT NULL)"
    )


def _create_scan_settled(conn: Connection) -> None:
    # Ids a scan run fetched but keeps no row for (excluded by labels, deleted, failed past the budget): a resumed
    # run re-lists its unfinished pages, and must not fetch and tally these again.
    conn.exec_driver_sql(
        "CREATE TABLE IF NOT EXISTS scan_settled (gmail_id TEXT PRIMARY KEY NOT NULL, run_id INTEGER NOT NULL,"
        " outcome TEXT NOT NULL)"
    )


def _index_sender_months_by_month(conn: Connection) -> None:
    # A month's senders (the chart bar's filter) was a scan of every sender's months (~150 ms at 1.5M rows).
    conn.exec_driver_sql("CREATE INDEX ix_sender_months_month ON sender_months (month)")


def _cover_choices_in_mail_count_index(conn: Connection) -> None:
    # The size and date filters ("average message at least 100 KB", "last mail before a day") test each sender a
    # page walks in mail-count order, and their matches gather at the far end of that walk (small senders, silent
    # ones): with the columns they test in the index, the walk reads no row until a sender matches (at 200,000
    # senders a page 48 -> 5 ms and 64 -> 3 ms). A batch changes them only with a sender's count, so the import
    # updates this index no more often than before.
    conn.exec_driver_sql("DROP INDEX ix_senders_mails_sent")
    conn.exec_driver_sql(
        "CREATE INDEX ix_senders_mails_sent ON senders"
        " (mails_sent DESC, sender, bytes, last_seen_unix, first_seen_unix)"
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "ingest_runs: run records", _create_ingest_runs),
    Migration(2, "senders, seen_mails and sync_state", _create_counts),
    Migration(3, "ingest_runs.launch_token", _add_launch_token),
    Migration(4, "gmail_retry and backfill_checked", _create_scan_tables),
    Migration(5, "senders.id/domain/unsubscribe, sender_months, domain and month rollups, search", add_rollups),
    Migration(6, "scan_settled: fetched ids a run keeps no row for", _create_scan_settled),
    Migration(7, "senders.search_key and its covering index, for searches tested on every sender", add_search_key),
    Migration(8, "data_generation: raised by every commit, the viewer's cache key", add_generation),
    Migration(9, "scan_sample and scan_listed: a first full scan's listing in its random order", add_scan_sample),
    Migration(10, "sender_months indexed by month, for the chart bar's filter", _index_sender_months_by_month),
    Migration(11, "the mail-count index covers the size and date filters' columns", _cover_choices_in_mail_count_index),
)
LATEST_VERSION = MIGRATIONS[-1].version
# The original Rust gmail-stats (user_version 0-2, detected by its columns) is rebuilt into this version's schema.
RUST_UPGRADE_VERSION = 3


def _create_foundation_schema(conn: Connection) -> None:
    for step in MIGRATIONS:
        if step.version <= RUST_UPGRADE_VERSION:
            step.apply(conn)


def schema_version(conn: Connection) -> int:
    value = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
    return int(value)


def check_not_too_new(version: int) -> None:
    if version > LATEST_VERSION:
        raise SchemaTooNewError(
            f"the database has schema version {version} but this gmail-stats knows only up to "
            f"{LATEST_VERSION}; upgrade gmail-stats (nothing was changed)"
        )


def migrate(engine: Engine) -> list[Migration]:
    """Applies every pending step in order and returns those applied; a no-op on an up-to-date file."""
    with engine.connect() as conn:
        current = schema_version(conn)
    check_not_too_new(current)
    enable_wal(engine)
    applied: list[Migration] = []
    if current < LATEST_VERSION:
        with engine.begin() as conn:
            if is_rust_era(conn):
                upgrade_rust_era(conn, create_schema=_create_foundation_schema)
                conn.exec_driver_sql(f"PRAGMA user_version = {int(RUST_UPGRADE_VERSION)}")
                current = RUST_UPGRADE_VERSION
    for step in MIGRATIONS:
        if step.version <= current:
            continue
        with engine.begin() as conn:
            step.apply(conn)
            # PRAGMA takes no bound parameters; the value is our own integer.
            conn.exec_driver_sql(f"PRAGMA user_version = {int(step.version)}")
        applied.append(step)
    return applied
