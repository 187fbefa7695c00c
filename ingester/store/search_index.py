"""Keeps the FTS5 trigram index `sender_search` in step with `senders` (new senders, changed display names).

Written from here rather than by triggers: a trigger into FTS5 on the sender upsert made every import batch
several times slower. Callers own the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from sqlalchemy import Connection

_ROWS = "SELECT id, sender, display_name FROM senders WHERE sender IN (SELECT value FROM json_each(?))"
_ADD = "INSERT INTO sender_search (rowid, sender, display_name) VALUES (?, ?, ?)"
# External-content FTS5: a row leaves the index by repeating the values it was indexed with.
_REMOVE = "INSERT INTO sender_search (sender_search, rowid, sender, display_name) VALUES ('delete', ?, ?, ?)"


def index_senders(conn: Connection, *, new: Iterable[str], renamed: Mapping[str, str]) -> None:
    """Indexes senders just inserted (`new`) and re-indexes those whose name may have changed (`renamed` maps
    each to the name it was indexed with); call after the upsert of the batch."""
    wanted = [*new, *renamed]
    if not wanted:
        return
    adds, removes = [], []
    for row_id, sender, name in conn.exec_driver_sql(_ROWS, (json.dumps(wanted),)):
        old = renamed.get(sender)
        if old is None:
            adds.append((row_id, sender, name))
        elif old != name:
            removes.append((row_id, sender, old))
            adds.append((row_id, sender, name))
    if removes:
        conn.exec_driver_sql(_REMOVE, removes)
    if adds:
        conn.exec_driver_sql(_ADD, adds)


def unindex_sender(conn: Connection, *, row_id: int, sender: str, display_name: str) -> None:
    conn.exec_driver_sql(_REMOVE, (row_id, sender, display_name))
