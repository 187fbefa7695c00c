"""Schema step 9: a first full scan's persisted listing and its seeded random order (`scan_sample`, `scan_listed`).

A first full scan lists every id (with its thread) before fetching any, stores them here, then fetches whole
threads in a seeded random permutation: `scan_listed.slot` is a thread's position in it, and `scan_sample.threads_done`
says how many slots are settled, so a resume goes on from there and the viewer can estimate from that random sample.
Frozen history like every step (see `shared.schema.migrations`); runs in the caller's transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection

SAMPLE_DDL: tuple[str, ...] = (
    "CREATE TABLE scan_sample (run_id INTEGER PRIMARY KEY NOT NULL, seed INTEGER NOT NULL,"
    " listed INTEGER NOT NULL DEFAULT 0, ids_total INTEGER NOT NULL DEFAULT 0,"
    " threads_total INTEGER NOT NULL DEFAULT 0, threads_done INTEGER NOT NULL DEFAULT 0,"
    " started_at_unix INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE scan_listed (gmail_id TEXT PRIMARY KEY NOT NULL, thread_id TEXT, slot INTEGER)",
    "CREATE INDEX ix_scan_listed_slot ON scan_listed (slot)",
)


def add_scan_sample(conn: Connection) -> None:
    """Creates the two tables, empty: only a first full scan run after this step fills them."""
    for statement in SAMPLE_DDL:
        conn.exec_driver_sql(statement)
