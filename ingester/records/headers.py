"""Pure extraction of the few header fields we store, from one raw header block; never raises on any bytes.

Only From, Sender, Return-Path, Message-ID, Date, X-Gmail-Labels, List-Unsubscribe(-Post) and Content-Length are
read: metadata only.
"""

from __future__ import annotations

import calendar
import re
from email.utils import parsedate_tz
from functools import lru_cache
from typing import NamedTuple

from shared.timeutil import EARLIEST_PLAUSIBLE_UNIX, plausible_unix

_WANTED = (
    b"from",
    b"sender",
    b"return-path",
    b"message-id",
    b"date",
    b"x-gmail-labels",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
    b"content-length",
)
_SLOT = {name: slot for slot, name in enumerate(_WANTED)}
# The spellings mail software writes, so that most lines skip `bytes.lower()`; any other case still matches.
_SLOT.update(
    {
        spelling: _SLOT[spelling.lower()]
        for spelling in (
            b"From",
            b"Sender",
            b"Return-Path",
            b"Message-ID",
            b"Message-Id",
            b"Date",
            b"X-Gmail-Labels",
            b"List-Unsubscribe",
            b"List-Unsubscribe-Post",
            b"Content-Length",
        )
    }
)
# Matched against b"\n" + block: a wanted name at a line start, optional blanks, the colon, the rest of the line
# and its continuation lines (RFC 5322 section 2.2.3 folding). The leading literal lets the regex engine skip
# from newline to newline in C, and `findall` keeps the per-line work out of Python.
_WANTED_LINE = re.compile(
    rb"\n(" + b"|".join(re.escape(n) for n in _WANTED) + rb")[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.IGNORECASE
)


# A wanted header value longer than this (unfolded) keeps only its first and last halves; real ones are < 1 KB.
VALUE_CAP_BYTES = 64 * 1024


class HeaderFields(NamedTuple):
    """The first non-empty, unfolded value of each wanted header (RFC 2047 still encoded), or None.

    A NamedTuple: built once per message, where a frozen dataclass's `__init__` costs a microsecond.
    """

    has_valid_line: bool
    from_: str | None = None
    sender: str | None = None
    return_path: str | None = None
    message_id: str | None = None
    date: str | None = None
    gmail_labels: str | None = None
    list_unsubscribe: str | None = None
    oversized: bool = False  # a wanted header was longer than `VALUE_CAP_BYTES`: only its two ends were read
    list_unsubscribe_post: str | None = None
    content_length: str | None = None  # mboxcl/mboxcl2 writers state the body's length


def _has_valid_line(block: bytes) -> bool:
    """A header line is valid when it is not a continuation and has a colon after at least one character."""
    for line in block.split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            continue
        if line.find(b":") > 0:
            return True
    return False


def parse_header_block(block: bytes) -> HeaderFields:
    newline = block.find(b"\n")
    first_line = block if newline == -1 else block[:newline]
    if not (first_line.find(b":") > 0 and first_line[:1] not in (b" ", b"\t")) and not _has_valid_line(block):
        return HeaderFields(has_valid_line=False)
    values: list[str | None] = [None] * len(_WANTED)
    oversized = False
    half = VALUE_CAP_BYTES // 2
    for name, raw in _WANTED_LINE.findall(b"\n" + block):
        slot = _SLOT.get(name)
        if slot is None:
            slot = _SLOT[name.lower()]
        if values[slot] is not None:
            continue
        if len(raw) > VALUE_CAP_BYTES:
            # Bounded work per header, whatever its size; an address in <...> is usually at its end.
            raw = raw[:half] + b" " + raw[-half:]
            oversized = True
        if b"\n" in raw:  # unfolding removes each line break that precedes whitespace
            raw = raw.replace(b"\n", b"")
        if b"\r" in raw:
            raw = raw.replace(b"\r", b"")
        try:
            value = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            value = raw.decode("latin-1").strip()  # maps every byte: undecodable input never drops a message
        if value:
            values[slot] = value
    (
        from_,
        sender,
        return_path,
        message_id,
        date,
        gmail_labels,
        list_unsubscribe,
        list_unsubscribe_post,
        content_length,
    ) = values
    return HeaderFields(
        True,
        from_,
        sender,
        return_path,
        message_id,
        date,
        gmail_labels,
        list_unsubscribe,
        oversized,
        list_unsubscribe_post,
        content_length,
    )


MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
# The shape almost every Date header has: "[Day, ]D Mon YYYY HH:MM[:SS] ±HHMM"; anything else goes to the stdlib.
_COMMON_DATE = re.compile(
    r"(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+([+-])(\d{2})(\d{2})"
)


# A Date header is ~40 characters; beyond this it is noise, and `parsedate_tz` splits the whole text.
_DATE_LIMIT = 256


def parse_date(value: str | None) -> int | None:
    """Unix seconds of an RFC 5322 date, or None when it cannot be read or lies before 1971 (never 0 or less).

    The upper bound needs a clock: callers apply `plausible_unix` with theirs.
    """
    if not value:
        return None
    match = _COMMON_DATE.match(value)
    if match is not None:
        day, mon, year, hour, minute, second, sign, zh, zm = match.groups()
        fast, midnight = _day_start(year, mon, day)
        h, m = int(hour), int(minute)
        if fast and h < 24 and m < 60:
            if midnight is None:
                return None
            offset = (int(zh) * 3600 + int(zm) * 60) * (1 if sign == "+" else -1)
            date_unix = midnight + h * 3600 + m * 60 + int(second or 0) - offset
            return date_unix if date_unix >= EARLIEST_PLAUSIBLE_UNIX else None
    return plausible_unix(_stdlib_date(value[:_DATE_LIMIT]), now=None)


@lru_cache(maxsize=4096)
def _day_start(year: str, mon: str, day: str) -> tuple[bool, int | None]:
    """(whether the fast path reads this day, Unix seconds of its UTC start or None when it does not exist).

    Cached on the matched text, as a mailbox's dates cluster in days; an unknown month name or a day outside
    1-31 goes to the stdlib parser instead.
    """
    month = MONTHS.get(mon.lower())
    if month is None or not 1 <= int(day) <= 31:
        return False, None
    try:
        return True, calendar.timegm((int(year), month, int(day), 0, 0, 0))
    except (ValueError, OverflowError):
        return True, None


def _stdlib_date(value: str) -> int | None:
    try:
        parsed = parsedate_tz(value)
        if parsed is None:
            return None
        return calendar.timegm(parsed[:6]) - (parsed[9] or 0)
    except Exception:  # the stdlib parser's failure modes vary by version; any of them means unreadable
        return None
