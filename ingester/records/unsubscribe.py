"""List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) values → usable targets; never raises.

Only what a user can act on is kept: the first `https:`/`http:` URL with a host and the first `mailto:` with one
address (that address and an optional `subject` only: `shared.text.unsubscribe_links`), each at most `MAX_TARGET`
characters of printable ASCII. Anything else (other schemes, junk, hostile bytes) is dropped: the message is still
counted, the sender just shows no unsubscribe link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from shared.text.unsubscribe_links import clean_mailto

MAX_TARGET = 2048
# Each target is `<uri>` (RFC 2369 section 2); the list is comma-separated, with optional comments around.
_BRACKETED = re.compile(r"<([^<>]{1,4096})>")
# Printable ASCII without space: a URI (RFC 3986) has no raw spaces, quotes or controls.
_URI_CHARS = re.compile(r"[!#-;=?-~]+")
# RFC 8058 section 3.1: exactly this key=value pair signals one-click unsubscription.
_ONE_CLICK = re.compile(r"(?:^|[\s;,])List-Unsubscribe=One-Click(?:$|[\s;,])", re.IGNORECASE)
_MAX_SCAN = 16 * 1024


@dataclass(frozen=True, slots=True)
class UnsubscribeTargets:
    web: str | None
    mailto: str | None
    one_click: bool

    @property
    def any(self) -> bool:
        return self.web is not None or self.mailto is not None


NONE = UnsubscribeTargets(None, None, False)


def _clean(uri: str) -> str | None:
    uri = "".join(uri.split())  # RFC 2369 section 2: whitespace inside the brackets is ignored
    if not uri or len(uri) > MAX_TARGET or _URI_CHARS.fullmatch(uri) is None:
        return None
    return uri


def _web(uri: str) -> str | None:
    if uri[:5].lower() != "http:" and uri[:6].lower() != "https:":
        return None  # `urlsplit` costs microseconds, and most targets of a message are `mailto:`
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None
    if parts.scheme.lower() not in ("https", "http") or not host or parts.username or parts.password:
        return None
    return uri


def parse_unsubscribe(header: str | None, post: str | None = None) -> UnsubscribeTargets:
    """The targets of one message's headers (values already unfolded); `NONE` when nothing usable is there."""
    if not header:
        return NONE
    web = mailto = None
    for match in _BRACKETED.finditer(header[:_MAX_SCAN]):
        uri = _clean(match.group(1))
        if uri is None:
            continue
        if web is None:
            web = _web(uri)
        if mailto is None:
            mailto = clean_mailto(uri)
        if web is not None and mailto is not None:
            break
    # One-click needs an HTTPS target to POST to (RFC 8058 section 3.1); a mailto alone cannot be one-click.
    one_click = (
        bool(post) and web is not None and web[:6].lower() == "https:" and _ONE_CLICK.search(post or "") is not None
    )
    return UnsubscribeTargets(web, mailto, one_click)
