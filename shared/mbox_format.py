"""The mbox separator rule and the "is this an mbox" check: one definition for the importer and the viewer.

Only reads a stream it is given; never decides what to count (that is the ingester's framer).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import BinaryIO

# `From <envelope> <asctime date>` as mail software writes it (Takeout, mutt, Mail::Box, procmail, mailman's
# pipermail with its `user at host`, public-inbox and `git format-patch`): the weekday, month, day, time with or
# without seconds, then the year, with a numeric or named time zone before or after the year.
# A named zone is letters of any length (`WETDST`, written by old Solaris mailers); a month may be spelt with four
# letters (`June`, `July`, `Sept`).
SEPARATOR = re.compile(
    rb"From (?P<envelope>\S+(?: at \S+)?) +[A-Za-z]{3} +(?P<mon>[A-Za-z]{3}|June|July|Sept) +(?P<day>\d{1,2})"
    rb" +(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?"
    rb"(?: +(?P<zone>[+-]\d{4}|[A-Za-z]+))? +(?P<year>\d{4})(?: +(?P<zone_after>[+-]\d{4}|[A-Za-z]+))?"
    rb"(?: +remote from \S+)?[ \t]*\r?(?=\n|\Z)"
)
# A UTF-8 byte order mark some editors and converters put before the first separator.
BOM = b"\xef\xbb\xbf"
# A line that a reader would take for a separator but `SEPARATOR` does not accept: `From `, a day or month name
# and a digit, then a header-like line. Judged only after a blank line or at the start of the file, by
# `suspect_line_end`: one regex with lazy runs between those three parts backtracked in the square of the line's
# length (a crafted 2 KB line cost seconds), so each part is found by a forward search of its own.
# No word boundary before the name: a flipped blank glues it to the word before (`FrixDec 04`).
_DAY_OR_MONTH = re.compile(rb"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(?![a-z])")
_DIGIT = re.compile(rb"\d")
# A header name and its colon; `:` is outside the name's class, so a failed match gives back each byte once.
_HEADER_LIKE = re.compile(rb"[!-9;-~]+[ \t]*:")


def suspect_line_end(data: bytes, start: int, limit: int) -> int | None:
    """The offset of the newline ending a suspect separator line at `start` (judged within `data[:limit]`), or None.

    A separator split in two by one flipped byte (`From 1000\n0002@xxx Fri Dec …`) is judged as one line when
    the line after the pair looks like a header. Linear in the lines' length: the cheap tests come first (a line
    end, a header-like line after it), and each search runs forward once; the first day or month name is the one
    to test, since any digit after a later one also follows the first.
    """
    if not data.startswith(b"From ", start) or start + 5 >= limit:
        return None
    line_end = data.find(b"\n", start, limit)
    if line_end == -1:
        return None
    if _HEADER_LIKE.match(data, line_end + 1, limit) is None:
        if data.startswith(b"From ", line_end + 1):
            return None  # the next line is a separator (or a candidate) of its own
        second_end = data.find(b"\n", line_end + 1, limit)
        if second_end == -1 or _HEADER_LIKE.match(data, second_end + 1, limit) is None:
            return None  # no header after the pair: a body paragraph
        line_end = second_end
    first = start + 5
    while first < line_end and data[first] in b" \t\r\n":  # `From  6784…@xxx Mon …`: a flipped byte, still meant
        first += 1
    if first >= line_end:
        return None
    name = _DAY_OR_MONTH.search(data, first + 1, line_end)
    if name is None or _DIGIT.search(data, name.end(), line_end) is None:
        return None
    return line_end


# Separator lines are short; a candidate line is judged within this many bytes from its start.
SEPARATOR_WINDOW = 2048
# How far the sniff reads for a first separator before it gives up (a Takeout file starts with one).
SNIFF_LIMIT = 64 * 1024 * 1024
_SNIFF_CHUNK = 1024 * 1024
_MONTHS = {
    m: i
    for i, m in enumerate(
        (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1
    )
}
_ARCHIVES = ((b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip/tgz archive"), (b"BZh", "a bzip2 archive"))


# Named zones as mail software writes them in separators, in hours east of UTC: RFC 5322's obsolete zones (section
# 4.3, which takes CST as US Central) and common European, Asian and Pacific names (BST is British Summer Time).
# Ambiguous names (IST, AST) are left out: an unknown name reads as UTC, and the importer warns.
ZONE_HOURS: dict[bytes, float] = {
    b"UT": 0, b"UTC": 0, b"GMT": 0, b"Z": 0, b"WET": 0,
    b"EST": -5, b"EDT": -4, b"CST": -6, b"CDT": -5, b"MST": -7, b"MDT": -6, b"PST": -8, b"PDT": -7,
    b"AKST": -9, b"AKDT": -8, b"HST": -10, b"NST": -3.5, b"NDT": -2.5,
    b"BST": 1, b"WEST": 1, b"CET": 1, b"MET": 1, b"MEZ": 1, b"CEST": 2, b"MEST": 2, b"MESZ": 2,
    b"EET": 2, b"EEST": 3, b"MSK": 3,
    b"HKT": 8, b"SGT": 8, b"AWST": 8, b"JST": 9, b"KST": 9, b"ACST": 9.5, b"AEST": 10, b"AEDT": 11,
    b"NZST": 12, b"NZDT": 13,
}  # fmt: skip


def zone_offset(zone: bytes) -> int | None:
    """Seconds east of UTC of a separator's zone (`+0200`, `-0430`, `MEST`); None for a name not in `ZONE_HOURS`."""
    if zone[:1] in (b"+", b"-") and len(zone) == 5 and zone[1:].isdigit():
        return (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60) * (1 if zone[:1] == b"+" else -1)
    hours = ZONE_HOURS.get(zone.upper())
    return None if hours is None else int(hours * 3600)


def separator_zone(match: re.Match[bytes]) -> bytes:
    """The zone a `SEPARATOR` match names (before or after the year), or b"" when it has none."""
    return match["zone"] or match["zone_after"] or b""


def separator_date(match: re.Match[bytes]) -> int | None:
    """Unix seconds of a `SEPARATOR` match's date (zone applied; no zone or an unknown name: UTC), or None."""
    month = _MONTHS.get(match["mon"][:3].lower())
    if month is None:
        return None
    fields = (int(match["year"]), month, int(match["day"]), int(match["hour"]), int(match["minute"]))
    try:
        date_unix = calendar.timegm((*fields, int(match["second"] or 0)))
    except (ValueError, OverflowError):
        return None
    zone = separator_zone(match)
    return date_unix - (zone_offset(zone) or 0) if zone else date_unix


class NotMbox(StrEnum):
    EMPTY = "empty"
    ARCHIVE = "archive"
    NO_SEPARATOR = "no_separator"
    UNKNOWN_SEPARATORS = "unknown_separators"


@dataclass(frozen=True, slots=True)
class SniffResult:
    """None `problem` means an mbox; otherwise `reason` says, in a sentence, what the file looked like."""

    problem: NotMbox | None
    reason: str = ""


def _verdict(head: bytes, first_from: int | None, scanned: int, limit: int) -> SniffResult:
    if not head:
        return SniffResult(NotMbox.EMPTY, "the file is empty")
    for magic, what in _ARCHIVES:
        if head.startswith(magic):
            return SniffResult(NotMbox.ARCHIVE, f"it is {what}; unzip the Takeout archive first and give the .mbox")
    where = f"in its first {scanned:,} bytes" if scanned >= limit else "in it"
    if first_from is None:
        return SniffResult(NotMbox.NO_SEPARATOR, f"no line starting with 'From ' {where}")
    return SniffResult(
        NotMbox.UNKNOWN_SEPARATORS,
        f"lines start with 'From ' (the first at byte {first_from}) but none {where} is a separator of a known shape",
    )


def sniff_mbox(stream: BinaryIO, *, limit: int = SNIFF_LIMIT) -> SniffResult:
    """Whether the stream (at its start) is an mbox: a line that `SEPARATOR` accepts within `limit` bytes.

    Reads at most `limit` bytes, a chunk at a time, and stops at the first separator.
    """
    head = b""
    tail = b""  # the unfinished last line of what was read so far (at most a separator window of it)
    tail_at = 0  # its offset in the file
    line_start = True  # whether `tail` starts at the start of a line
    first_from: int | None = None
    scanned = 0
    while scanned < limit:
        chunk = stream.read(min(_SNIFF_CHUNK, limit - scanned))
        if not head:
            head = chunk[:16]
            if chunk.startswith(BOM):  # the framer reads past it too
                chunk, tail_at = chunk[len(BOM) :], len(BOM)
                scanned += len(BOM)
        scanned += len(chunk)
        eof = not chunk or scanned >= limit
        data = tail + chunk
        last_newline = len(data) if eof else data.rfind(b"\n") + 1
        starts = [0] if line_start else []
        end = last_newline if eof else max(last_newline - 1, 0)  # needles of complete lines only
        hit = data.find(b"\nFrom ", 0, end)
        while hit != -1:
            starts.append(hit + 1)
            hit = data.find(b"\nFrom ", hit + 1, end)
        for start in starts:
            if not data.startswith(b"From ", start):
                continue
            stop = min(start + SEPARATOR_WINDOW, last_newline)
            match = SEPARATOR.match(data, start, stop)
            # As in the framer: a match cut by the window (not by a line end or the file's end) is none.
            if match is not None and (match.end() < stop or stop == last_newline):
                return SniffResult(None)
            if first_from is None:
                first_from = tail_at + start
        if eof:
            break
        tail_at += last_newline
        tail = data[last_newline:]
        line_start = True
        if len(tail) > SEPARATOR_WINDOW:  # a long line is no separator: drop it, its next line starts later
            tail_at += len(tail)
            tail, line_start = b"", False
    return _verdict(head, first_from, scanned, limit)
