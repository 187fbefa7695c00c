"""Schema step 7: `senders.search_key`, the address and the name in one string, and its covering index.

A search SQLite cannot answer from the trigram index (one or two characters, or text most senders contain) is a
test of every sender. Reading one short key and the mail count per sender from a covering index, instead of each
table row and two `LIKE` calls, halves that pass. The ingester's upsert writes the key. Neither a generated column
(SQLite 3.40 reads the table for it instead of covering it with the index) nor triggers (+55 % on an import
of 100,000 new senders, even with a `WHEN` that is false) could keep it at less cost. Frozen history
like every step (see `shared.schema.migrations`); runs in the caller's transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection

SEARCH_KEY_SQL = "sender || char(10) || display_name"  # in SQL, what `shared.schema.models.search_key` writes
SEARCH_KEY_DDL: tuple[str, ...] = ("CREATE INDEX ix_senders_search ON senders (search_key, mails_sent)",)


def add_search_key(conn: Connection) -> None:
    """Adds `search_key`, fills it from every row, and indexes it with the mail count."""
    conn.exec_driver_sql("ALTER TABLE senders ADD COLUMN search_key TEXT NOT NULL DEFAULT ''")
    conn.exec_driver_sql(f"UPDATE senders SET search_key = {SEARCH_KEY_SQL}")
    for statement in SEARCH_KEY_DDL:
        conn.exec_driver_sql(statement)
