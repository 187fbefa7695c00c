"""Unsubscribe targets reduced to what is safe to put behind a link: pure functions for the ingester (when it
stores a target) and the viewer (when it shows one, also one stored before this rule existed).

A `mailto:` keeps only its one address and an optional `subject`: RFC 6068 lets a URI pre-fill `body`, `cc`,
`bcc` and more, and some clients also honour `attach=` — a stranger's List-Unsubscribe must not choose those.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote

# One addr-spec (RFC 5322 section 3.4.1, dot-atom form) once percent-decoded: no second address (`,`), no
# parameters, no spaces, quotes, brackets or controls.
_ADDRESS = re.compile(r"[A-Za-z0-9!#$%&'*+/=^_`{|}~.-]{1,64}@[A-Za-z0-9.-]{1,253}")
# Characters RFC 6068 section 2 lets stand unencoded in an addr-spec and in a header value.
_ADDRESS_SAFE = "!$'*+/=^_`{|}~.-@"
MAX_SUBJECT = 200


def clean_mailto(uri: str) -> str | None:
    """`mailto:ADDRESS` or `mailto:ADDRESS?subject=…`, every other parameter dropped; None when `uri` is not a
    `mailto:` with exactly one plain address."""
    if uri[:7].lower() != "mailto:":
        return None
    to, _, query = uri[7:].partition("?")
    address = unquote(to)
    if _ADDRESS.fullmatch(address) is None or address.startswith("@") or address.endswith("@"):
        return None
    cleaned = "mailto:" + quote(address, safe=_ADDRESS_SAFE)
    subject = next((value for key, value in parse_qsl(query) if key.lower() == "subject"), "")
    subject = "".join(ch for ch in subject if ch.isprintable())[:MAX_SUBJECT]
    return f"{cleaned}?subject={quote(subject, safe='')}" if subject else cleaned


def clean_target(uri: str | None) -> str | None:
    """A stored target as it may be shown: a `mailto:` cleaned (None when nothing safe is left), a web URL as is."""
    if uri is None or uri[:7].lower() != "mailto:":
        return uri
    return clean_mailto(uri)
