"""Schema step 8: `data_generation`, one row whose number every ingester commit raises, in that same transaction.

The viewer keys its one cache on it: an answer computed inside a read transaction that saw generation `n` is the
answer for every later reader of `n` (no commit can happen without raising it; see `shared.db.writer_engine`).
Frozen history like every step (see `shared.schema.migrations`); runs in the caller's transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection

GENERATION_TABLE = "data_generation"
GENERATION_DDL: tuple[str, ...] = (
    "CREATE TABLE data_generation (id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1), generation INTEGER NOT NULL,"
    " epoch TEXT NOT NULL)",
    # `epoch` tells this file from another one (a database deleted and made again counts from 1 again).
    "INSERT INTO data_generation (id, generation, epoch) VALUES (1, 1, lower(hex(randomblob(8))))",
)
# Run by the writer before every COMMIT once the table exists.
BUMP_SQL = "UPDATE data_generation SET generation = generation + 1 WHERE id = 1"
READ_SQL = "SELECT epoch, generation FROM data_generation WHERE id = 1"


def add_generation(conn: Connection) -> None:
    for statement in GENERATION_DDL:
        conn.exec_driver_sql(statement)
