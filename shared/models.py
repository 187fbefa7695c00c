"""Typed SQLAlchemy models of the current schema; DDL lives in `shared.migrations`, never `create_all`."""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


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


class Base(DeclarativeBase):
    pass


class Sender(Base):
    """Per-sender totals, updated incrementally as messages are counted."""

    __tablename__ = "senders"

    sender: Mapped[str] = mapped_column(Text, primary_key=True)
    display_name: Mapped[str] = mapped_column(Text, default="")
    display_name_unix: Mapped[int | None] = mapped_column(Integer)
    mails_sent: Mapped[int] = mapped_column(Integer, default=0)
    first_seen_unix: Mapped[int | None] = mapped_column(Integer)
    last_seen_unix: Mapped[int | None] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(Integer, default=0)
    unread: Mapped[int] = mapped_column(Integer, default=0)
    list_unsubscribe: Mapped[int] = mapped_column(Integer, default=0)


class SeenMail(Base):
    """One row per message seen, metadata only: never subjects, bodies or recipients."""

    __tablename__ = "seen_mails"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    mail_id: Mapped[str] = mapped_column(Text, unique=True)
    rfc_message_id: Mapped[str | None] = mapped_column(Text, index=True)
    gmail_id: Mapped[str | None] = mapped_column(Text, index=True)
    sender: Mapped[str] = mapped_column(Text, default="")
    date_unix: Mapped[int | None] = mapped_column(Integer)
    size_bytes: Mapped[int] = mapped_column(Integer, default=0)
    labels: Mapped[str] = mapped_column(Text, default="")
    unread: Mapped[int] = mapped_column(Integer, default=0)
    list_unsubscribe: Mapped[int] = mapped_column(Integer, default=0)
    source: Mapped[str] = mapped_column(String, default=Source.MBOX)
    run_id: Mapped[int | None] = mapped_column(Integer)
    counted: Mapped[int] = mapped_column(Integer, default=1)


class IngestRun(Base):
    """One ingestion run (import, scan or backfill): lifecycle `state` plus evidence-quality `outcome`."""

    __tablename__ = "ingest_runs"

    run_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String)
    state: Mapped[str] = mapped_column(String)
    pid: Mapped[int | None] = mapped_column(Integer)
    started_at_unix: Mapped[int] = mapped_column(Integer)
    updated_at_unix: Mapped[int] = mapped_column(Integer)
    finished_at_unix: Mapped[int | None] = mapped_column(Integer)
    messages_seen: Mapped[int] = mapped_column(Integer, default=0)
    messages_new: Mapped[int] = mapped_column(Integer, default=0)
    messages_skipped: Mapped[int] = mapped_column(Integer, default=0)
    messages_excluded: Mapped[int] = mapped_column(Integer, default=0)
    total_estimate: Mapped[int | None] = mapped_column(Integer)
    bytes_total: Mapped[int | None] = mapped_column(Integer)
    bytes_done: Mapped[int] = mapped_column(Integer, default=0)
    resume_token: Mapped[str | None] = mapped_column(Text)
    mbox_path: Mapped[str | None] = mapped_column(Text)
    mbox_fingerprint: Mapped[str | None] = mapped_column(Text)
    error_kind: Mapped[str | None] = mapped_column(String)
    error: Mapped[str | None] = mapped_column(Text)
    auth_url: Mapped[str | None] = mapped_column(Text)
    warnings_count: Mapped[int] = mapped_column(Integer, default=0)
    warnings_tail: Mapped[str] = mapped_column(Text, default="[]")
    outcome: Mapped[str | None] = mapped_column(String)
    launch_token: Mapped[str | None] = mapped_column(Text, index=True)


class SyncState(Base):
    """Small key/value facts about the mailbox (for example the Gmail `historyId` of the last complete scan)."""

    __tablename__ = "sync_state"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class GmailRetry(Base):
    """Gmail ids a scan could not fetch within its retry budget; the next scan fetches them first."""

    __tablename__ = "gmail_retry"

    gmail_id: Mapped[str] = mapped_column(Text, primary_key=True)
    run_id: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text, default="")


class BackfillChecked(Base):
    """Scan rows the Message-ID backfill has settled: `found`, `none` (no Message-ID) or `gone` (deleted)."""

    __tablename__ = "backfill_checked"

    mail_id: Mapped[str] = mapped_column(Text, primary_key=True)
    status: Mapped[str] = mapped_column(Text)


class ScanSettled(Base):
    """Ids a scan run fetched but keeps no row for (`excluded`, `gone`, `failed`), so its resume skips them."""

    __tablename__ = "scan_settled"

    gmail_id: Mapped[str] = mapped_column(Text, primary_key=True)
    run_id: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(Text)
