"""Keys of id-less messages outside Takeout: a digest of the header block and one of the body, so two different
messages with identical headers both count (`ingester.mbox.legacy_keys` keeps older `hdr:` keys deduplicating).

Imported by the parse workers: no database code here (SQLAlchemy alone would add ~20 MB to each worker).
"""

from __future__ import annotations

import hashlib
from typing import BinaryIO

from ingester.mbox.regions import Region
from shared.mbox_format import BOM

HEADER_KEY = "hdr:"  # the key of older imports: the header block's digest alone
BODY_KEY = "hdb:"  # `hdb:<header digest>.<body digest>`
_DIGEST_READ = 64 * 1024  # below glibc's mmap threshold, as the framer's reads


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
        if region.start == 0:  # the file's first message may begin with a byte order mark before its separator
            stream.seek(0)
            start += len(BOM) if stream.read(len(BOM)) == BOM else 0
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
