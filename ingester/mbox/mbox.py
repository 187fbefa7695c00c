"""Streaming framing of an mbox into message regions, with flat memory and linear time; no header semantics here.

A separator is a line `shared.mbox_format.SEPARATOR` accepts; any other line (`>From`, `From here on, ...`) is
body, except a suspect one (`suspect_line_end` after a blank line): it starts a region that is not counted, so
it is reported instead of silently merged. Only each region's header block is ever held, never a whole message.
A file framed by Content-Length throughout (mboxcl2) is cut by `lengths.py` instead, with these same pieces.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ingester.mbox.regions import Region, Separator, parse_postmark
from shared.mbox_format import BOM, SEPARATOR, SEPARATOR_WINDOW, suspect_line_end

CHUNK_BYTES = 1024 * 1024
# A header block longer than this is truncated (framing is unaffected); Takeout header blocks are a few KB.
HEADER_CAP_BYTES = 4 * 1024 * 1024
# The window keeps this many bytes before any position it is asked to keep: enough to see a blank line ending
# just before a candidate separator (`\n\r\n`).
BEHIND = 3
# The end of a header block: a blank line, or a line starting with `From ` (maybe a separator).
_HEADER_END = re.compile(rb"\n\r?\n|\nFrom ")
_NEEDLE = b"\nFrom "


class Window:
    """A sliding view `data` of the stream beginning at absolute offset `base`; all callers speak absolutes."""

    def __init__(self, stream: BinaryIO, start: int, chunk: int, tick: Callable[[], None] | None = None) -> None:
        stream.seek(start)
        self.stream = stream
        self.chunk = chunk
        self.tick = tick
        self.base = start
        self.data = b""
        self.eof = False

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    def fill(self, keep_from: int) -> None:
        """Drops the bytes before `keep_from` (less `BEHIND`) and appends a chunk (sets `eof` when there is none).

        Calls `tick` first: every read passes here, so a caller that parses in-process hears it however long one
        region takes (the tick may raise to stop the parse).
        """
        if self.tick is not None:
            self.tick()
        more = self.stream.read(self.chunk)
        if not more:
            self.eof = True
        keep_from = max(keep_from - BEHIND, self.base)
        self.data = self.data[keep_from - self.base :] + more
        self.base = keep_from

    def jump(self, offset: int) -> None:
        """Moves the view to `offset` when that lies past what is held: the bytes between are never read."""
        if offset > self.end:
            self.stream.seek(offset)
            self.base, self.data, self.eof = offset, b"", False

    def ensure(self, until: int, *, keep_from: int) -> None:
        while self.end < until and not self.eof:
            self.fill(keep_from)

    def slice(self, start: int, stop: int) -> bytes:
        return self.data[start - self.base : stop - self.base]


def _blank_before(window: Window, line_start: int) -> bool:
    """Whether the line starting at `line_start` follows an empty line or starts the file."""
    if line_start <= 1:
        return True
    rel = line_start - window.base
    before = window.data[max(rel - 3, 0) : rel]
    return before.endswith((b"\n\n", b"\n\r\n")) or (line_start == 2 and before == b"\r\n")


def separator_at(window: Window, line_start: int, *, keep_from: int) -> Separator | None:
    """The separator (or suspect line) starting at `line_start` (already known to be a line start), if any.

    Judged on the bytes from 3 before the line to `SEPARATOR_WINDOW` after its start only, so that every
    segment of a file reaches the same verdict on the same line.
    """
    if window.base + len(window.data) < line_start + SEPARATOR_WINDOW:
        window.ensure(line_start + SEPARATOR_WINDOW, keep_from=keep_from)  # keeps `BEHIND` bytes before it
    rel = line_start - window.base
    limit = min(len(window.data), rel + SEPARATOR_WINDOW)
    match = SEPARATOR.match(window.data, rel, limit)
    if match is None:
        if not _blank_before(window, line_start):
            return None
        line_end = suspect_line_end(window.data, rel, limit)
        if line_end is not None:
            return Separator(line_start, window.base + line_end + 1, None, window.data[rel:line_end])
        return None
    # The lookahead accepts the window's edge as an end of line; that is only true at the end of the file.
    if match.end() == limit and not (window.eof and limit == len(window.data)):
        return None
    line_end = window.base + match.end()
    header_start = min(line_end + 1, window.end)
    return Separator(line_start, header_start, parse_postmark(match))


def _next_separator(window: Window, pos: int, *, before: int | None = None) -> Separator | None:
    """The first separator (or suspect line) starting after a newline at an offset `>= pos` (and `< before`).

    `before` lets a segment that starts inside a huge message stop at its own end instead of reading on to the
    message's end: without it, every segment of a 1 GiB message scanned the rest of it (quadratic time).
    """
    while True:
        base = window.base
        hit = window.data.find(_NEEDLE, max(pos - 1 - base, 0))
        if hit != -1:
            line_start = base + hit + 1
            if before is not None and line_start >= before:
                return None
            found = separator_at(window, line_start, keep_from=line_start - 1)
            if found is not None:
                return found
            pos = line_start + 1
            continue
        if window.eof or (before is not None and window.end >= before + len(_NEEDLE)):
            return None
        # A needle cut by the window's end starts at or after this offset.
        pos = max(pos, window.end - len(_NEEDLE) + 2)
        window.fill(pos - 1)


def read_header(window: Window, sep: Separator) -> tuple[bytes, Separator | None, bool]:
    """The header block after `sep` up to its blank line, or up to a separator that comes first (then returned),
    and whether it was cut at `HEADER_CAP_BYTES` (then the block is its first `HEADER_CAP_BYTES`).

    One forward scan: each byte is searched once, so a run of separators with nothing between them, or header
    blocks without a blank line, cost linear time.
    """
    start = sep.header_start
    if window.base + len(window.data) < start + 2:
        window.ensure(start + 2, keep_from=start)
    rel = start - window.base
    if window.data.startswith((b"\n", b"\r\n"), rel):
        return b"", None, False
    cap = start + HEADER_CAP_BYTES
    scan_from = start - 1  # a `\nFrom ` may begin with the separator line's own newline
    while True:
        base = window.base
        found = _HEADER_END.search(window.data, scan_from - base, min(len(window.data), cap - base))
        if found is None:
            if window.end >= cap:
                return window.slice(start, cap), None, True
            if window.eof:
                return window.slice(start, window.end), None, False
            scan_from = max(scan_from, window.end - len(_NEEDLE))  # a match cut by the window's end
            window.fill(start)
            continue
        if found.group() != _NEEDLE:
            return window.slice(start, base + found.start() + 1), None, False
        line_start = base + found.start() + 1
        inner = separator_at(window, line_start, keep_from=start)
        if inner is not None:
            return window.slice(start, line_start), inner, False
        scan_from = line_start


def bom_separator(window: Window, start: int) -> Separator | None:
    """At the file's start, a separator after a UTF-8 byte order mark; its message then starts at 0 (with it)."""
    if start != 0:
        return None
    window.ensure(len(BOM), keep_from=0)
    if not window.data.startswith(BOM):
        return None
    found = separator_at(window, len(BOM), keep_from=0)
    if found is None or found.postmark is None:
        return None
    return found._replace(start=0)


def file_size(stream: BinaryIO) -> int:
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
    stream: BinaryIO,
    *,
    start: int = 0,
    stop: int | None = None,
    align: bool = False,
    chunk: int = CHUNK_BYTES,
    tick: Callable[[], None] | None = None,
) -> Iterator[Region]:
    """Yields, in file order, the regions that start in `[start, stop)`; the last one runs to the next separator.

    `start` is 0 or a separator's offset, or with `align` any offset: then the first region is the first
    separator at or after it (no preamble). Regions of consecutive `[a, b)`, `[b, c)` calls tile the file
    exactly, which is what lets segments of one file be parsed in parallel. `tick` is called before each read.
    """
    if align and start > 0:
        window = Window(stream, max(start - 1 - BEHIND, 0), chunk, tick)
        current = _next_separator(window, start, before=stop)
    else:
        window = Window(stream, max(start - BEHIND, 0), chunk, tick)
        current = separator_at(window, start, keep_from=start) or bom_separator(window, start)
        current = current or _next_separator(window, start + 1)
        preamble_end = current.start if current is not None else file_size(stream)
        if preamble_end > start and not _preamble_is_blank(stream, start, preamble_end):
            yield Region(start, preamble_end, None, b"")
    while current is not None and (stop is None or current.start < stop):
        header, following, cut = read_header(window, current)
        if following is None:
            following = _next_separator(window, current.header_start + len(header))
        end = following.start if following is not None else window.end
        yield Region(current.start, end, current.postmark, header, current.postmark is None, cut, current.line)
        current = following
