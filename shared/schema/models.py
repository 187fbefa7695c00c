"""The schema: SQLAlchemy Core tables, plus the triggers and the search index they need, in one `METADATA`.

Every query (viewer, ingester, export) is built on these tables. `shared.schema.migrations` holds the ordered steps
that bring any older file to this shape; a test builds both and compares column types, nullability, defaults and
indexes, so the steps and this module cannot drift apart. No ORM sessions: rows travel as dataclasses.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import (
    DDL,
    CheckConstraint,
    Column,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)

from shared.schema.migration_search import SEARCH_KEY_DDL


class RunState(StrEnum):
    RUNNING = "running"
    AWAITING_AUTH = "awaiting_auth"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ABANDONED = "abandoned"


OPEN_STATES = (RunState.RUNNING, RunState.AWAITING_AUTH)


class RunOutcome(StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"


class Source(StrEnum):
    MBOX = "mbox"
    GMAIL_API = "gmail_api"
    BACKFILL = "backfill"


METADATA = MetaData()
_ZERO = text("0")


def _count(name: str) -> Column[int]:
    return Column(name, Integer, nullable=False, server_default=_ZERO)


ingest_runs = Table(
    "ingest_runs",
    METADATA,
    Column("run_id", Integer, primary_key=True, autoincrement=True),
    Column("source", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("pid", Integer),
    Column("started_at_unix", Integer, nullable=False),
    Column("updated_at_unix", Integer, nullable=False),
    Column("finished_at_unix", Integer),
    _count("messages_seen"),
    _count("messages_new"),
    _count("messages_skipped"),
    _count("messages_excluded"),
    Column("total_estimate", Integer),
    Column("bytes_total", Integer),
    _count("bytes_done"),
    Column("resume_token", Text),
    Column("mbox_path", Text),
    Column("mbox_fingerprint", Text),
    Column("error_kind", Text),
    Column("error", Text),
    Column("auth_url", Text),
    _count("warnings_count"),
    Column("warnings_tail", Text, nullable=False, server_default="[]"),
    Column("outcome", Text),
    # Set by whoever launched the ingester (the viewer), so it can find the run row of its own launch.
    Column("launch_token", Text),
    Index("ix_ingest_runs_state", "state"),
    Index("ix_ingest_runs_launch_token", "launch_token"),
    sqlite_autoincrement=True,
)


def search_key(sender: str, display_name: str) -> str:
    """`senders.search_key`, which every writer of a sender sets (`shared.schema.migration_search` says why)."""
    return f"{sender}\n{display_name}"


# Per-sender totals, updated incrementally as messages are counted. `id` is the stable key of the search index.
senders = Table(
    "senders",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("sender", Text, nullable=False),
    Column("display_name", Text, nullable=False, server_default=""),
    Column("display_name_unix", Integer),
    _count("mails_sent"),
    Column("first_seen_unix", Integer),
    Column("last_seen_unix", Integer),
    _count("bytes"),
    _count("unread"),
    _count("list_unsubscribe"),  # messages that carried a List-Unsubscribe header
    Column("domain", Text, nullable=False, server_default=""),  # registrable domain (public-suffix aware)
    # The targets of the latest message (by date) whose List-Unsubscribe had one; RFC 2369 and RFC 8058.
    Column("unsubscribe_web", Text),
    Column("unsubscribe_mailto", Text),
    Column("unsubscribe_unix", Integer),
    _count("one_click"),
    # Address, newline, name: what a search tested on every sender reads, from `ix_senders_search` alone (a
    # covering index: one short key and the mail count per sender, not the whole row). See `search_key`.
    Column("search_key", Text, nullable=False, server_default=""),
    UniqueConstraint("sender", name="uq_senders_sender"),
    # One index per sort, each ending in the tie-break, so every page is an index walk with LIMIT. Each costs
    # the import a b-tree update per changed sender and batch: no index for sorts nobody needs.
    # Also holds what the size and date filters test, so a page walked in this order reads no row to test them.
    Index("ix_senders_mails_sent", text("mails_sent DESC"), "sender", "bytes", "last_seen_unix", "first_seen_unix"),
    Index("ix_senders_last_seen", "last_seen_unix", "sender"),
    Index("ix_senders_first_seen", "first_seen_unix", "sender"),
    Index("ix_senders_bytes", "bytes", "sender"),
    Index("ix_senders_unread_ratio", text("(CAST(unread AS REAL) / max(mails_sent, 1))"), "sender"),
    Index("ix_senders_name", text("(lower(coalesce(nullif(display_name, ''), sender)))"), "sender"),
    Index("ix_senders_domain", "domain"),
)

# One row per message seen, metadata only: never subjects, bodies or recipients.
seen_mails = Table(
    "seen_mails",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("mail_id", Text, nullable=False),
    Column("rfc_message_id", Text),
    Column("gmail_id", Text),
    Column("sender", Text, nullable=False, server_default=""),
    Column("date_unix", Integer),
    _count("size_bytes"),
    Column("labels", Text, nullable=False, server_default=""),
    _count("unread"),
    _count("list_unsubscribe"),
    Column("source", Text, nullable=False),
    Column("run_id", Integer),
    Column("counted", Integer, nullable=False, server_default=text("1")),
    UniqueConstraint("mail_id", name="uq_seen_mails_mail_id"),
    Index("ix_seen_mails_rfc_message_id", "rfc_message_id"),
    Index("ix_seen_mails_gmail_id", "gmail_id"),
)

# Small key/value facts about the mailbox (for example the Gmail `historyId` of the last complete scan).
sync_state = Table(
    "sync_state",
    METADATA,
    Column("key", Text, primary_key=True, nullable=False),
    Column("value", Text, nullable=False),
)

# Gmail ids a scan could not fetch within its retry budget; the next scan fetches them first.
gmail_retry = Table(
    "gmail_retry",
    METADATA,
    Column("gmail_id", Text, primary_key=True, nullable=False),
    Column("run_id", Integer),
    Column("reason", Text, nullable=False, server_default=""),
)

# Scan rows the Message-ID backfill has settled: `found`, `none` (no Message-ID) or `gone` (deleted).
backfill_checked = Table(
    "backfill_checked",
    METADATA,
    Column("mail_id", Text, primary_key=True, nullable=False),
    Column("status", Text, nullable=False),
)

# Ids a scan run fetched but keeps no row for (`excluded`, `gone`, `failed`), so its resume skips them.
scan_settled = Table(
    "scan_settled",
    METADATA,
    Column("gmail_id", Text, primary_key=True, nullable=False),
    Column("run_id", Integer, nullable=False),
    Column("outcome", Text, nullable=False),
)

# A first full scan's random order (`shared.schema.migration_sample`): the run, its seed and how far it got...
scan_sample = Table(
    "scan_sample",
    METADATA,
    Column("run_id", Integer, primary_key=True, nullable=False),
    Column("seed", Integer, nullable=False),
    _count("listed"),
    _count("ids_total"),
    _count("threads_total"),
    _count("threads_done"),
    _count("started_at_unix"),
)

# ...and every id it listed, with its thread's slot in the seeded permutation (null until the listing ends).
scan_listed = Table(
    "scan_listed",
    METADATA,
    Column("gmail_id", Text, primary_key=True, nullable=False),
    Column("thread_id", Text),
    Column("slot", Integer),
    Index("ix_scan_listed_slot", "slot"),
)

# Counted messages and bytes per sender and calendar month (UTC, "YYYY-MM"); undated mail has no row.
sender_months = Table(
    "sender_months",
    METADATA,
    Column("sender", Text, nullable=False),
    Column("month", Text, nullable=False),
    _count("messages"),
    _count("bytes"),
    PrimaryKeyConstraint("sender", "month"),
    # The chart bar's filter ("mail in one month"): one month's senders without reading every sender's months.
    Index("ix_sender_months_month", "month"),
    sqlite_with_rowid=False,
)

# The rollups below are written with the rows they sum, in the same transaction, by `ingester.store.store` (per batch,
# aggregated in memory: triggers per sender row cost several times the import's own writes).
domains = Table(
    "domains",
    METADATA,
    Column("domain", Text, primary_key=True, nullable=False),
    _count("senders"),
    _count("mails_sent"),
    _count("bytes"),
    _count("unread"),
    _count("list_unsubscribe"),
    Column("first_seen_unix", Integer),
    Column("last_seen_unix", Integer),
    Index("ix_domains_mails_sent", text("mails_sent DESC"), "domain"),
    Index("ix_domains_senders", "senders", "domain"),
    Index("ix_domains_bytes", "bytes", "domain"),
    Index("ix_domains_unread", "unread", "domain"),
    Index("ix_domains_last_seen", "last_seen_unix", "domain"),
    Index("ix_domains_first_seen", "first_seen_unix", "domain"),
    Index("ix_domains_unread_ratio", text("(CAST(unread AS REAL) / max(mails_sent, 1))"), "domain"),
    sqlite_with_rowid=False,
)

months = Table(
    "months",
    METADATA,
    Column("month", Text, primary_key=True, nullable=False),
    _count("messages"),
    _count("bytes"),
    sqlite_with_rowid=False,
)

domain_months = Table(
    "domain_months",
    METADATA,
    Column("domain", Text, nullable=False),
    Column("month", Text, nullable=False),
    _count("messages"),
    _count("bytes"),
    PrimaryKeyConstraint("domain", "month"),
    sqlite_with_rowid=False,
)

# One row: raised by every ingester commit in its own transaction (`shared.schema.migration_generation`).
data_generation = Table(
    "data_generation",
    METADATA,
    Column("id", Integer, CheckConstraint("id = 1"), primary_key=True, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("epoch", Text, nullable=False),
)

# Substring search over address and name: an FTS5 trigram index (SQLite >= 3.34) on `senders.id`, so a search,
# even one that matches nothing, reads the index instead of every row. Kept by `ingester.store.search_index` (a
# trigger into FTS5 on the sender upsert made every batch several times slower).
SEARCH_DDL: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE sender_search USING fts5(sender, display_name, content='senders', content_rowid='id',"
    " tokenize='trigram')",
)

# `create_all` (used by the schema test as the reference) adds the search index and the search key's index
# (`shared.schema.migration_search`) after the tables.
for _statement in (*SEARCH_DDL, *SEARCH_KEY_DDL):
    event.listen(METADATA, "after_create", DDL(_statement))  # type: ignore[no-untyped-call]
