"""Databases of the original Rust gmail-stats: detect them by their columns and rebuild them in our schema.

The Rust tool kept `seen_mails(mail_id)` (Gmail ids), `senders(sender, mails_sent)`, maybe an `ingest_runs` of its
own, at `user_version` 0-2, which overlaps our own versions, so detection never trusts the version number.
Runs inside the caller's transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from shared.text.normalize import parse_sender


def _columns(conn: Connection, table: str) -> set[str]:
    # PRAGMA takes no bound parameters; `table` is one of our own literal names.
    return {str(row[1]) for row in conn.exec_driver_sql(f"PRAGMA table_info({table})")}


def is_rust_era(conn: Connection) -> bool:
    """True for a Rust-era file: its `seen_mails` or `senders` lacks the columns every version of ours has."""
    seen = _columns(conn, "seen_mails")
    senders = _columns(conn, "senders")
    rust_seen = "mail_id" in seen and "source" not in seen
    rust_senders = "mails_sent" in senders and "display_name" not in senders
    return rust_seen or rust_senders


def upgrade_rust_era(conn: Connection, *, create_schema: Callable[[Connection], None]) -> None:
    """Moves the old tables aside, creates ours, copies ids as text and re-normalised, merged sender counts.

    Old scan rows keep their Gmail id as both `mail_id` and `gmail_id`, with no sender and no Message-ID;
    `gmail-stats scan --backfill-message-ids` fills those in later. The old run table stays as `legacy_ingest_runs`.
    """
    had_seen = bool(_columns(conn, "seen_mails"))
    had_senders = bool(_columns(conn, "senders"))
    runs = _columns(conn, "ingest_runs")
    if had_seen:
        conn.exec_driver_sql("ALTER TABLE seen_mails RENAME TO legacy_seen_mails")
    if had_senders:
        conn.exec_driver_sql("ALTER TABLE senders RENAME TO legacy_senders")
    if runs and "warnings_tail" not in runs:
        conn.exec_driver_sql("DROP TABLE IF EXISTS legacy_ingest_runs")
        conn.exec_driver_sql("ALTER TABLE ingest_runs RENAME TO legacy_ingest_runs")
    create_schema(conn)
    if had_seen:
        # Gmail ids are hex text; an INTEGER-affinity old column may have stored an all-digit one as a number.
        conn.exec_driver_sql(
            "INSERT OR IGNORE INTO seen_mails (mail_id, gmail_id, source, counted)"
            " SELECT CAST(mail_id AS TEXT), CAST(mail_id AS TEXT), 'gmail_api', 1 FROM legacy_seen_mails"
            " WHERE mail_id IS NOT NULL AND CAST(mail_id AS TEXT) != ''"
        )
        conn.exec_driver_sql("DROP TABLE legacy_seen_mails")
    if had_senders:
        names: dict[str, str] = {}
        counts: dict[str, int] = {}
        for raw, count in conn.exec_driver_sql("SELECT CAST(sender AS TEXT), mails_sent FROM legacy_senders"):
            identity = parse_sender(raw or "")
            counts[identity.key] = counts.get(identity.key, 0) + int(count or 0)
            if identity.display_name and not names.get(identity.key):
                names[identity.key] = identity.display_name
        if counts:
            conn.exec_driver_sql(
                "INSERT INTO senders (sender, display_name, mails_sent) VALUES (?, ?, ?)",
                [(key, names.get(key, ""), count) for key, count in counts.items()],
            )
        conn.exec_driver_sql("DROP TABLE legacy_senders")
