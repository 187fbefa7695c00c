"""Schema step 5: sender ids, registrable domains, unsubscribe targets, per-month counts, rollups and search.

Frozen history like every step (see `shared.schema.migrations`); backfills what the stored rows allow: domains from the
sender keys, months from counted messages. Unsubscribe targets were never stored before, so they start empty.
Runs inside the caller's transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection

from shared.text.domains import registrable_domain

_SENDERS = """
CREATE TABLE senders (
    id INTEGER PRIMARY KEY,
    sender TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    display_name_unix INTEGER,
    mails_sent INTEGER NOT NULL DEFAULT 0,
    first_seen_unix INTEGER,
    last_seen_unix INTEGER,
    bytes INTEGER NOT NULL DEFAULT 0,
    unread INTEGER NOT NULL DEFAULT 0,
    list_unsubscribe INTEGER NOT NULL DEFAULT 0,
    domain TEXT NOT NULL DEFAULT '',
    unsubscribe_web TEXT,
    unsubscribe_mailto TEXT,
    unsubscribe_unix INTEGER,
    one_click INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT uq_senders_sender UNIQUE (sender)
)
"""
_TABLES = (
    """CREATE TABLE sender_months (sender TEXT NOT NULL, month TEXT NOT NULL,
       messages INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0,
       PRIMARY KEY (sender, month)) WITHOUT ROWID""",
    """CREATE TABLE domains (domain TEXT NOT NULL PRIMARY KEY, senders INTEGER NOT NULL DEFAULT 0,
       mails_sent INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0, unread INTEGER NOT NULL DEFAULT 0,
       list_unsubscribe INTEGER NOT NULL DEFAULT 0, first_seen_unix INTEGER, last_seen_unix INTEGER) WITHOUT ROWID""",
    """CREATE TABLE months (month TEXT NOT NULL PRIMARY KEY, messages INTEGER NOT NULL DEFAULT 0,
       bytes INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID""",
    """CREATE TABLE domain_months (domain TEXT NOT NULL, month TEXT NOT NULL, messages INTEGER NOT NULL DEFAULT 0,
       bytes INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (domain, month)) WITHOUT ROWID""",
)
_INDEXES = (
    "CREATE INDEX ix_senders_mails_sent ON senders (mails_sent DESC, sender)",
    "CREATE INDEX ix_senders_last_seen ON senders (last_seen_unix, sender)",
    "CREATE INDEX ix_senders_first_seen ON senders (first_seen_unix, sender)",
    "CREATE INDEX ix_senders_bytes ON senders (bytes, sender)",
    "CREATE INDEX ix_senders_unread_ratio ON senders ((CAST(unread AS REAL) / max(mails_sent, 1)), sender)",
    "CREATE INDEX ix_senders_name ON senders ((lower(coalesce(nullif(display_name, ''), sender))), sender)",
    "CREATE INDEX ix_senders_domain ON senders (domain)",
    "CREATE INDEX ix_domains_mails_sent ON domains (mails_sent DESC, domain)",
    "CREATE INDEX ix_domains_senders ON domains (senders, domain)",
    "CREATE INDEX ix_domains_bytes ON domains (bytes, domain)",
    "CREATE INDEX ix_domains_unread ON domains (unread, domain)",
    "CREATE INDEX ix_domains_last_seen ON domains (last_seen_unix, domain)",
    "CREATE INDEX ix_domains_first_seen ON domains (first_seen_unix, domain)",
    "CREATE INDEX ix_domains_unread_ratio ON domains ((CAST(unread AS REAL) / max(mails_sent, 1)), domain)",
)
_COPY_SENDERS = (
    "INSERT INTO senders (sender, display_name, display_name_unix, mails_sent, first_seen_unix, last_seen_unix,"
    " bytes, unread, list_unsubscribe, domain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Rust-era rows (no run) were counted through the old per-sender totals, not row by row: they stay undated.
_BACKFILL_MONTHS = """
INSERT INTO sender_months (sender, month, messages, bytes)
SELECT m.sender, strftime('%Y-%m', m.date_unix, 'unixepoch'), count(*), sum(m.size_bytes)
FROM seen_mails m JOIN senders s ON s.sender = m.sender
WHERE m.counted = 1 AND m.run_id IS NOT NULL AND m.date_unix IS NOT NULL
  AND strftime('%Y-%m', m.date_unix, 'unixepoch') IS NOT NULL
GROUP BY m.sender, 2
"""
BACKFILL_ROLLUPS = (
    "INSERT INTO domains SELECT domain, count(*), sum(mails_sent), sum(bytes), sum(unread), sum(list_unsubscribe),"
    " min(first_seen_unix), max(last_seen_unix) FROM senders GROUP BY domain",
    "INSERT INTO months SELECT month, sum(messages), sum(bytes) FROM sender_months GROUP BY month",
    "INSERT INTO domain_months SELECT s.domain, m.month, sum(m.messages), sum(m.bytes)"
    " FROM sender_months m JOIN senders s ON s.sender = m.sender GROUP BY s.domain, m.month",
)
# The search index as step 5 made it, frozen: a later change to `shared.schema.models.SEARCH_DDL` is a step of its own.
_SEARCH = (
    "CREATE VIRTUAL TABLE sender_search USING fts5(sender, display_name, content='senders', content_rowid='id',"
    " tokenize='trigram')",
)
_CHUNK = 5000


def add_rollups(conn: Connection) -> None:
    """Rebuilds `senders` with an integer id and a domain, creates the rollups and the search index, and backfills
    them, with the DDL of schema version 5 (frozen above, whatever `shared.schema.models` declares today)."""
    conn.exec_driver_sql("DROP INDEX IF EXISTS ix_senders_mails_sent")
    conn.exec_driver_sql("ALTER TABLE senders RENAME TO senders_v4")
    conn.exec_driver_sql(_SENDERS)
    for statement in (*_TABLES, *_INDEXES, *_SEARCH):
        conn.exec_driver_sql(statement)
    result = conn.exec_driver_sql(
        "SELECT sender, display_name, display_name_unix, mails_sent, first_seen_unix, last_seen_unix, bytes,"
        " unread, list_unsubscribe FROM senders_v4 ORDER BY sender"
    )
    rows = result.fetchall()
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        conn.exec_driver_sql(_COPY_SENDERS, [(*row, registrable_domain(str(row[0]))) for row in chunk])
    conn.exec_driver_sql("DROP TABLE senders_v4")
    conn.exec_driver_sql(_BACKFILL_MONTHS)
    for statement in BACKFILL_ROLLUPS:
        conn.exec_driver_sql(statement)
    conn.exec_driver_sql("INSERT INTO sender_search (sender_search) VALUES ('rebuild')")
