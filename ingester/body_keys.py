"""Keys of id-less messages outside Takeout: a digest of the header block and one of the body, so two different
messages with identical headers both count; and the rule that lets keys of older imports keep deduplicating.

Older versions keyed such a message `hdr:<sha256 of its header block>` alone. The first message of a re-import
that carries such a header hash *claims* that row (it is recorded, uncounted, under its new key); any other
message with the same headers is then a message the old key had merged, and counts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import BinaryIO

from sqlalchemy import Connection

from ingester.mbox import Region
from ingester.records import MailRecord

HEADER_KEY = "hdr:"  # the key of older imports: the header block's digest alone
BODY_KEY = "hdb:"  # `hdb:<header digest>.<body digest>`
_DIGEST_READ = 1024 * 1024


def body_key(stream: BinaryIO, region: Region, header_key: str) -> str:
    """The `hdb:` key of an id-less region whose `hdr:` key is `header_key`, reading its body from `stream`.

    The body is what follows the header block's blank line up to the region's end, read in bounded pieces (the
    framer never held it). The separator line is left out: two copies of one message differ only there.
    """
    assert region.postmark is not None
    start = region.start + len(region.postmark.line) + 1 + len(region.header_block)
    digest = hashlib.sha256()
    position = stream.tell()
    try:
        stream.seek(start)
        head = stream.read(2)
        skip = 2 if head == b"\r\n" else 1 if head[:1] == b"\n" else 0
        digest.update(head[skip:])
        remaining = region.end - start - len(head)
        while remaining > 0:
            piece = stream.read(min(remaining, _DIGEST_READ))
            if not piece:
                break
            digest.update(piece)
            remaining -= len(piece)
    finally:
        stream.seek(position)
    return f"{BODY_KEY}{header_key[len(HEADER_KEY) :]}.{digest.hexdigest()}"


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
