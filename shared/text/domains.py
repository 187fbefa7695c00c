"""Registrable domains ("example.co.uk" for "news.example.co.uk"), public-suffix aware and offline.

The list is the one bundled with the `publicsuffixlist` package (updated with its releases); nothing here ever
fetches a list at run time.
"""

from __future__ import annotations

import ipaddress
from functools import cache, lru_cache

from publicsuffixlist import PublicSuffixList


@cache
def _suffixes() -> PublicSuffixList:
    # Built on first use, not at import: parsing the bundled list takes a few tens of milliseconds.
    return PublicSuffixList()


@lru_cache(maxsize=65536)
def registrable_domain(sender: str) -> str:
    """The registrable domain of a sender key (`local@host`), or the host when it has none; "" without a host.

    A host that is itself a public suffix, a single label (`localhost`) or an address literal is kept whole:
    grouping by it is still the most useful answer. Never raises.
    """
    _, at, host = sender.rpartition("@")
    host = host.strip().strip(".").lower()
    if not at or not host:
        return ""
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal.removeprefix("ipv6:"))
    except ValueError:
        pass
    else:
        return host
    try:
        found = _suffixes().privatesuffix(host)
    except (ValueError, TypeError, UnicodeError):
        found = None
    return str(found) if found else host
