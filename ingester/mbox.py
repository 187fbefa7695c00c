"""Streaming framing of a Takeout mbox into message regions, with flat memory; no header semantics here.

A separator is a line `From <envelope> <asctime date ending in a 4-digit year>`; any other line (`>From`,
`From here on, ...`) is body. Only each region's header block is ever held, never a whole message.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ingester.headers import MONTHS

CHUNK_BYTES = 1024 * 1024
# A header block longer than this is truncated (framing is unaffected); Takeout header blocks are a few KB.
HEADER_CAP_BYTES = 4 * 1024 * 1024
# Separator lines are short; a candidate line is judged within this many bytes.
SEPARATOR_WINDOW = 2048
SNIFF_BYTES = 64 * 1024

SEPARATOR = re.compile(
    rb"From (\S+) +[A-Za-z]{3} +([A-Za-z]{3}) +(\d{1,2}) +(\d{1,2}):(\d{2})(?::(\d{2}))?"
    rb" +(?:([+-])(\d{2})(\d{2}) +)?(\d{4})[ \t]*\r?(?=\n|\Z)"
)
_BLANK_LINE = re.compile(rb"\n\r?\n")
_NEEDLE = b"\nFrom "


@dataclass(frozen=True, slots=True)
class Postmark:
    """A separator line: its envelope token, and its date (parsed only when a message's Date header fails)."""

    envelope: bytes
    line: bytes

    @property
    def date_unix(self) -> int | None:
        match = SEPARATOR.match(self.line)
        return _postmark_date(match) if match is not None else None

    @property
    def gmail_id(self) -> str | None:
        """Takeout's envelope `<decimal>@xxx` is Gmail's message id in decimal; the API shows it in hex."""
        local = self.envelope.split(b"@", 1)[0]
        if not local.isdigit() or len(local) > 20:
            return None
        return format(int(local), "x")


@dataclass(frozen=True, slots=True)
class Region:
    """Bytes `[start, end)` of the file: a message (with `postmark`) or a preamble before the first separator."""

    start: int
    end: int
    postmark: Postmark | None
    header_block: bytes

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class _Separator:
    start: int
    header_start: int
    postmark: Postmark


def _postmark_date(match: re.Match[bytes]) -> int | None:
    _envelope, mon, day, hour, minute, second, sign, zh, zm, year = match.groups()
    month = MONTHS.get(mon.decode("ascii").lower())
    if month is None:
        return None
    try:
        date_unix = calendar.timegm((int(year), month, int(day), int(hour), int(minute), int(second or 0)))
    except (ValueError, OverflowError):
        return None
    if sign is not None:
        date_unix -= (int(zh) * 3600 + int(zm) * 60) * (1 if sign == b"+" else -1)
    return date_unix


def parse_postmark(match: re.Match[bytes]) -> Postmark:
    return Postmark(envelope=match.group(1), line=match.group(0))


def looks_like_mbox(head: bytes) -> bool:
    """True when a separator line starts the sample or any line in it."""
    pos = 0
    while pos != -1:
        match = SEPARATOR.match(head, pos, pos + SEPARATOR_WINDOW)
        if match is not None and (match.end() < len(head) or len(head) < SNIFF_BYTES):
            return True
        hit = head.find(_NEEDLE, pos)
        pos = -1 if hit == -1 else hit + 1
    return False


class _Window:
    """A sliding view `data` of the stream beginning at absolute offset `base`; all callers speak absolutes."""

    def __init__(self, stream: BinaryIO, start: int, chunk: int) -> None:
        stream.seek(start)
        self.stream = stream
        self.chunk = chunk
        self.base = start
        self.data = b""
        self.eof = False

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    def fill(self, keep_from: int) -> None:
        """Drops the bytes before `keep_from` and appends one more chunk (sets `eof` when there is none)."""
        more = self.stream.read(self.chunk)
        if not more:
            self.eof = True
        keep_from = max(keep_from, self.base)
        self.data = self.data[keep_from - self.base :] + more
        self.base = keep_from

    def ensure(self, until: int, *, keep_from: int) -> None:
        while self.end < until and not self.eof:
            self.fill(keep_from)

    def slice(self, start: int, stop: int) -> bytes:
        return self.data[start - self.base : stop - self.base]


def _separator_at(window: _Window, line_start: int, *, keep_from: int) -> _Separator | None:
    """The separator whose line starts at `line_start` (already known to be a line start), if it is one."""
    if window.base + len(window.data) < line_start + SEPARATOR_WINDOW:
        window.ensure(line_start + SEPARATOR_WINDOW, keep_from=keep_from)
    rel = line_start - window.base
    limit = min(len(window.data), rel + SEPARATOR_WINDOW)
    match = SEPARATOR.match(window.data, rel, limit)
    if match is None:
        return None
    # The lookahead accepts the window's edge as an end of line; that is only true at the end of the file.
    if match.end() == limit and not (window.eof and limit == len(window.data)):
        return None
    line_end = window.base + match.end()
    header_start = min(line_end + 1, window.end)
    return _Separator(line_start, header_start, parse_postmark(match))


def _next_separator(
    window: _Window, pos: int, *, stop: int | None = None, keep_from: int | None = None
) -> _Separator | None:
    """The first separator whose line starts after a newline at an offset in `[pos, stop)`.

    Bytes before `keep_from` (default: wherever the search has got to) may be dropped from the window.
    """
    while True:
        base = window.base
        lo = max(pos - 1 - base, 0)
        hi = len(window.data) if stop is None else min(len(window.data), stop - 1 - base + len(_NEEDLE))
        hit = window.data.find(_NEEDLE, lo, hi)
        if hit != -1:
            line_start = base + hit + 1
            pin = line_start - 1 if keep_from is None else keep_from
            found = _separator_at(window, line_start, keep_from=pin)
            if found is not None:
                return found
            pos = line_start + 1
            continue
        if stop is not None and stop - 1 - base + len(_NEEDLE) <= len(window.data):
            return None
        if window.eof:
            return None
        # A needle cut by the window's end starts at or after this offset.
        pos = max(pos, window.end - len(_NEEDLE) + 2)
        window.fill(pos - 1 if keep_from is None else keep_from)


def _read_header(window: _Window, sep: _Separator) -> tuple[bytes, _Separator | None]:
    """The header block after `sep` up to its blank line, and a separator found inside it, if any."""
    start = sep.header_start
    while True:
        if window.base + len(window.data) < start + 2:
            window.ensure(start + 2, keep_from=start)
        rel = start - window.base
        if window.data.startswith(b"\n", rel) or window.data.startswith(b"\r\n", rel):
            return b"", None
        blank = _BLANK_LINE.search(window.data, rel, rel + HEADER_CAP_BYTES)
        if blank is None and not window.eof and len(window.data) - rel < HEADER_CAP_BYTES:
            window.fill(start)
            continue
        if blank is not None:
            stop = window.base + blank.start() + 1
        else:
            stop = window.base + min(rel + HEADER_CAP_BYTES, len(window.data))
        break
    # Almost always no "\nFrom " at all inside a header block: check that in C before the general search.
    lo = start - 1 - window.base
    if window.data.find(_NEEDLE, max(lo, 0), stop - 1 - window.base + len(_NEEDLE)) == -1:
        return window.slice(start, stop), None
    inner = _next_separator(window, start, stop=stop, keep_from=start)
    return window.slice(start, inner.start if inner is not None else stop), inner


def _file_size(stream: BinaryIO) -> int:
    position = stream.tell()
    size = stream.seek(0, 2)
    stream.seek(position)
    return size


def _preamble_is_blank(stream: BinaryIO, start: int, stop: int) -> bool:
    position = stream.tell()
    try:
        stream.seek(start)
        remaining = stop - start
        while remaining > 0:
            piece = stream.read(min(remaining, CHUNK_BYTES))
            if not piece:
                break
            if piece.strip():
                return False
            remaining -= len(piece)
        return True
    finally:
        stream.seek(position)


def iter_regions(
    stream: BinaryIO, *, start: int = 0, stop: int | None = None, align: bool = False, chunk: int = CHUNK_BYTES
) -> Iterator[Region]:
    """Yields, in file order, the regions that start in `[start, stop)`; the last one runs to the next separator.

    `start` is 0 or a separator's offset, or with `align` any offset: then the first region is the first
    separator at or after it (no preamble). Regions of consecutive `[a, b)`, `[b, c)` calls tile the file
    exactly, which is what lets segments of one file be parsed in parallel.
    """
    if align and start > 0:
        window = _Window(stream, start - 1, chunk)
        current = _next_separator(window, start)
    else:
        window = _Window(stream, start, chunk)
        current = _separator_at(window, start, keep_from=start) or _next_separator(window, start + 1)
        preamble_end = current.start if current is not None else _file_size(stream)
        if preamble_end > start and not _preamble_is_blank(stream, start, preamble_end):
            yield Region(start, preamble_end, None, b"")
    while current is not None and (stop is None or current.start < stop):
        header, following = _read_header(window, current)
        if following is None:
            following = _next_separator(window, current.header_start + len(header))
        end = following.start if following is not None else window.end
        yield Region(current.start, end, current.postmark, header)
        current = following
