"""Older imports keyed an id-less message outside Takeout `hdr:<sha256 of its header block>` alone; now it is
`hdb:<header digest>.<body digest>` (`ingester.mbox.body_keys`). The first message of a re-import that carries such a
header digest *claims* the old row (it is recorded, uncounted, under its new key); any other message with the
same headers is one the old key had merged into it, and counts. SQL only; the caller owns the transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection

from ingester.mbox.body_keys import BODY_KEY
from ingester.records import MailRecord


def legacy_claims(conn: Connection, records: Sequence[MailRecord], known: set[str]) -> set[str]:
    """The `hdb:` keys of `records` (not in `known`) that claim an older import's `hdr:` row of their headers.

    A header hash is claimed once: by a stored `hdb:` row with that hash, else by its first record here.
    """
    by_header: dict[str, str] = {}
    for record in records:
        key = record.mail_id
        if key.startswith(BODY_KEY) and key not in known:
            by_header.setdefault(key[len(BODY_KEY) : len(BODY_KEY) + 64], key)
    if not by_header:
        return set()
    sql = "SELECT substr(mail_id, 5) FROM seen_mails WHERE mail_id IN (SELECT 'hdr:' || value FROM json_each(?))"
    legacy = {row[0] for row in conn.exec_driver_sql(sql, (json.dumps(list(by_header)),))}
    claims = set()
    for header in legacy:
        # A range over the sorted primary-key index: every `hdb:<header>.<body>` row sorts in it.
        taken = conn.exec_driver_sql(
            "SELECT 1 FROM seen_mails WHERE mail_id > ? AND mail_id < ? LIMIT 1",
            (f"{BODY_KEY}{header}.", f"{BODY_KEY}{header}/"),
        ).first()
        if taken is None:
            claims.add(by_header[header])
    return claims
