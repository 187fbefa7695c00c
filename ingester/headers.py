"""Pure extraction of the few header fields we store, from one raw header block; never raises on any bytes.

Only From, Sender, Return-Path, Message-ID, Date, X-Gmail-Labels and List-Unsubscribe are read: metadata only.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from email.utils import parsedate_tz

from shared.normalize import decode_header_bytes

_WANTED = (b"from", b"sender", b"return-path", b"message-id", b"date", b"x-gmail-labels", b"list-unsubscribe")
_FOLD_WS = frozenset(b" \t")


@dataclass(frozen=True, slots=True)
class HeaderFields:
    """The first non-empty, unfolded value of each wanted header (RFC 2047 still encoded), or None."""

    has_valid_line: bool
    from_: str | None = None
    sender: str | None = None
    return_path: str | None = None
    message_id: str | None = None
    date: str | None = None
    gmail_labels: str | None = None
    list_unsubscribe: str | None = None


def _has_valid_line(block: bytes) -> bool:
    """A header line is valid when it is not a continuation and has a colon after at least one character."""
    for line in block.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            continue
        if line.find(b":") > 0:
            return True
    return False


def _first_value(block: bytes, lowered: bytes, name: bytes) -> str | None:
    """`lowered` is `b"\\n" + block.lower()`, so offsets in it are one past those in `block`."""
    needle = b"\n" + name
    size = len(lowered)
    start = 0
    while True:
        hit = lowered.find(needle, start)
        if hit == -1:
            return None
        cursor = hit + len(needle)
        while cursor < size and lowered[cursor] in _FOLD_WS:
            cursor += 1
        start = cursor
        if cursor >= size or lowered[cursor] != 0x3A:  # not "name:", e.g. "fromage:" or "from x"
            continue
        end = lowered.find(b"\n", cursor)
        while end != -1 and end + 1 < size and lowered[end + 1] in _FOLD_WS:
            end = lowered.find(b"\n", end + 1)
        if end == -1:
            end = size
        start = end
        raw = block[cursor : end - 1]  # from just after the colon to before the line's "\n"
        # RFC 5322 §2.2.3: unfolding removes each CRLF that precedes whitespace.
        value = decode_header_bytes(raw).replace("\r\n", "").replace("\n", "").strip()
        if value:
            return value


def parse_header_block(block: bytes) -> HeaderFields:
    if not _has_valid_line(block):
        return HeaderFields(has_valid_line=False)
    lowered = b"\n" + block.lower()
    values = [_first_value(block, lowered, name) for name in _WANTED]
    return HeaderFields(True, *values)


MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
# The shape almost every Date header has: "[Day, ]D Mon YYYY HH:MM[:SS] ±HHMM"; anything else goes to the stdlib.
_COMMON_DATE = re.compile(
    r"(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+([+-])(\d{2})(\d{2})"
)


def parse_date(value: str | None) -> int | None:
    """Unix seconds of an RFC 5322 date, or None when it cannot be read."""
    if not value:
        return None
    match = _COMMON_DATE.match(value)
    if match is not None:
        day, mon, year, hour, minute, second, sign, zh, zm = match.groups()
        month = MONTHS.get(mon.lower())
        if month is not None and 1 <= int(day) <= 31 and int(hour) < 24 and int(minute) < 60:
            offset = (int(zh) * 3600 + int(zm) * 60) * (1 if sign == "+" else -1)
            try:
                base = calendar.timegm((int(year), month, int(day), int(hour), int(minute), int(second or 0)))
            except (ValueError, OverflowError):
                return None
            return base - offset
    try:
        parsed = parsedate_tz(value)
        if parsed is None:
            return None
        return calendar.timegm(parsed[:6]) - (parsed[9] or 0)
    except (ValueError, OverflowError, TypeError, IndexError):
        return None
