"""Pure header-value rules shared by every ingester: sender keys, display names, Message-IDs, labels.

No I/O and no database here; every function is total (undecodable input never raises).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.header import decode_header, make_header
from email.utils import getaddresses
from functools import lru_cache

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SenderIdentity:
    key: str
    display_name: str


def decode_rfc2047(value: str) -> str:
    """Decodes RFC 2047 encoded-words; a malformed or unknown-charset word decodes with replacement characters."""
    if "=?" not in value:
        return value
    try:
        return str(make_header(decode_header(value)))
    except (LookupError, UnicodeError, ValueError, AssertionError):
        pass
    try:
        parts = decode_header(value)
    except Exception:
        return value
    out = []
    for chunk, charset in parts:
        if isinstance(chunk, str):
            out.append(chunk)
            continue
        try:
            out.append(chunk.decode(charset or "ascii", "replace"))
        except LookupError:
            out.append(chunk.decode("utf-8", "replace"))
    return "".join(out)


def collapse_whitespace(value: str) -> str:
    return _WHITESPACE.sub(" ", value).strip()


@lru_cache(maxsize=65536)
def parse_sender(value: str) -> SenderIdentity:
    """Sender key = first address containing `@` (per `getaddresses`), lower-cased; else the collapsed text.

    Cached because a mailbox repeats the same few thousand From values many times.
    """
    decoded = decode_rfc2047(value)
    try:
        pairs = getaddresses([decoded])
    except Exception:
        pairs = []
    for name, address in pairs:
        if "@" in address:
            return SenderIdentity(key=address.strip().lower(), display_name=collapse_whitespace(name))
    return SenderIdentity(key=collapse_whitespace(decoded), display_name="")


def normalize_message_id(value: str) -> str | None:
    """Trims, strips one surrounding `<>`, trims again; empty means the message has none."""
    text = value.strip()
    if len(text) >= 2 and text[0] == "<" and text[-1] == ">":
        text = text[1:-1].strip()
    return text or None


@lru_cache(maxsize=4096)
def parse_labels(value: str) -> tuple[str, ...]:
    """`X-Gmail-Labels` as a tuple of label names (comma-separated, possibly RFC 2047-encoded)."""
    decoded = decode_rfc2047(value)
    return tuple(label for label in (part.strip() for part in decoded.split(",")) if label)


# Gmail's system labels as Takeout writes them; reserved names, so compared case-insensitively.
SPAM_TRASH_LABELS = frozenset({"spam", "trash"})
UNREAD_LABEL = "unread"


def is_excluded(labels: tuple[str, ...], *, include_spam_trash: bool) -> bool:
    """Spam and Trash are left out unless asked for (the API scan excludes them too); Chat is never mail."""
    lowered = {label.lower() for label in labels}
    if "chat" in lowered:
        return True
    return not include_spam_trash and bool(lowered & SPAM_TRASH_LABELS)


def is_unread(labels: tuple[str, ...]) -> bool:
    return any(label.lower() == UNREAD_LABEL for label in labels)
