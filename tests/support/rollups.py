"""Recomputes every rollup from the base tables, so tests can assert the trigger-kept ones are exact."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in conn.execute(sql))


def assert_rollups_exact(db: Path) -> None:
    """`domains`, `months`, `domain_months` equal GROUP BYs of `senders`/`sender_months`; the search index is whole."""
    conn = sqlite3.connect(db)
    try:
        assert _rows(conn, "SELECT * FROM domains") == _rows(
            conn,
            "SELECT domain, count(*), sum(mails_sent), sum(bytes), sum(unread), sum(list_unsubscribe),"
            " min(first_seen_unix), max(last_seen_unix) FROM senders GROUP BY domain",
        )
        assert _rows(conn, "SELECT * FROM months WHERE messages != 0 OR bytes != 0") == _rows(
            conn,
            "SELECT month, sum(messages), sum(bytes) FROM sender_months GROUP BY month"
            " HAVING sum(messages) != 0 OR sum(bytes) != 0",
        )
        assert _rows(conn, "SELECT * FROM domain_months WHERE messages != 0 OR bytes != 0") == _rows(
            conn,
            "SELECT s.domain, m.month, sum(m.messages), sum(m.bytes) FROM sender_months m"
            " JOIN senders s ON s.sender = m.sender GROUP BY 1, 2 HAVING sum(m.messages) != 0 OR sum(m.bytes) != 0",
        )
        # Dated months never exceed a sender's total: `undated` is the (non-negative) rest.
        assert not _rows(
            conn,
            "SELECT s.sender FROM senders s JOIN sender_months m ON m.sender = s.sender"
            " GROUP BY s.sender HAVING sum(m.messages) > max(s.mails_sent)",
        )
        conn.execute("INSERT INTO sender_search (sender_search) VALUES ('integrity-check')")
    finally:
        conn.close()
