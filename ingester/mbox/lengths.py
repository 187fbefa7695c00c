"""mboxcl2 framing: a file whose every message states a `Content-Length` that frames it exactly is cut by those
lengths, so a `From ` line inside a body (an embedded message, which mboxcl2 does not escape) stays body.

The judgement is the whole file's, made before any segment is parsed, and again on every resume: either every
message is framed by its length (the segments are cut at true message starts) or none is (`mbox.iter_regions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ingester.mbox import mbox
from ingester.mbox.mbox import Window
from ingester.mbox.regions import Region, Separator
from shared.mbox_format import SEPARATOR_WINDOW

# A `Content-Length` line (matched against b"\n" + block, so the leading literal lets the engine skip from newline
# to newline in C) and whether a continuation line folds it. Only one plain decimal value counts: anything else (two
# of them, a folded or non-decimal value) makes the file one that is not Content-Length framed, the safe verdict.
_LENGTH_LINE = re.compile(rb"\ncontent-length[ \t]*:([^\n]*)(\n[ \t])?", re.IGNORECASE)
# What may lie between a body's stated end and the next separator, by the byte at that end: nothing (a separator
# starts there), or the blank line mboxcl2 writers add.
_GAP_BY_FIRST_BYTE = {b"\n": b"\n", b"\r": b"\r\n"}


def stated_length(header_block: bytes) -> int | None:
    """The body length a header block states, when it states exactly one, unfolded, in plain decimal."""
    found = _LENGTH_LINE.findall(b"\n" + header_block)
    if len(found) != 1 or found[0][1]:
        return None
    value = found[0][0].strip(b" \t\r")
    return int(value) if value.isdigit() and len(value) <= 18 else None


def _first(window: Window, start: int) -> Separator | None:
    """The separator at `start` (a line start, or the file's start after a byte order mark), if it is one."""
    sep = mbox.separator_at(window, start, keep_from=start) or mbox.bom_separator(window, start)
    return sep if sep is not None and sep.postmark is not None else None


def _framed(window: Window, sep: Separator, size: int) -> tuple[Region, Separator | None] | None:
    """The message at `sep` framed by its Content-Length and the separator right after it (None at the end of the
    file), or None when the length does not frame it exactly: none or an unreadable one, no blank line after the
    header block, or neither a separator nor the end of the file right after the stated body."""
    assert sep.postmark is not None
    header, following, cut = mbox.read_header(window, sep)
    stated = stated_length(header) if following is None and not cut else None
    if stated is None:
        return None
    blank = b"\r\n" if header.endswith(b"\r\n") else b"\n"  # as `takeout._length_note` measures a body
    body_start = sep.header_start + len(header) + len(blank)
    window.ensure(body_start, keep_from=sep.start)
    if window.slice(body_start - len(blank), body_start) != blank:
        return None
    body_end = body_start + stated
    if body_end > size:
        return None
    keep = body_end - 1 - mbox.BEHIND
    window.jump(keep)  # a long body is skipped, never read
    window.ensure(body_end + 2 + SEPARATOR_WINDOW, keep_from=keep)
    gap = _GAP_BY_FIRST_BYTE.get(window.slice(body_end, body_end + 1), b"")
    end = body_end + len(gap)
    if window.slice(body_end, end) != gap:
        return None
    region = Region(sep.start, end, sep.postmark, header, length_framed=True)
    if end == size:
        return region, None
    if window.slice(end - 1, end) != b"\n":
        return None
    following = mbox.separator_at(window, end, keep_from=keep)
    return (region, following) if following is not None and following.postmark is not None else None


def length_cuts(
    stream: BinaryIO,
    *,
    segment_bytes: int,
    chunk: int,
    resume_at: int = 0,
    tick: Callable[[], None] | None = None,
) -> tuple[int, ...] | None:
    """The whole file's verdict: None unless every message, from a separator at the file's start (or after a byte
    order mark) to its end, is framed exactly by its Content-Length; else the true message starts that segments
    begin at: `resume_at` and the first at or after each multiple of `segment_bytes`.

    Also None when `resume_at` is no message start of that framing: the run being resumed was framed by separator
    lines (by a version before this rule), and goes on so. Cheap when the file is not mboxcl2 (Takeout): the first
    header block without a Content-Length ends the walk; else it reads header blocks only, skipping bodies.
    """
    size = mbox.file_size(stream)
    window = Window(stream, 0, chunk, tick)
    cuts: list[int] = []
    next_cut, resumable = 0, resume_at == 0
    sep = _first(window, 0)
    if sep is None:
        return None
    while sep is not None:
        position = sep.start
        framed = _framed(window, sep, size)
        if framed is None:
            return None
        if position >= next_cut or position == resume_at:
            cuts.append(position)
            next_cut = (position // segment_bytes + 1) * segment_bytes
        resumable = resumable or position == resume_at
        sep = framed[1]
    return tuple(cuts) if resumable else None


def iter_length_regions(
    stream: BinaryIO,
    *,
    start: int,
    stop: int | None,
    chunk: int,
    tick: Callable[[], None] | None = None,
) -> Iterator[Region]:
    """The regions starting in `[start, stop)` of a file `length_cuts` judged Content-Length framed (`start` a
    true message start). Should a length no longer frame its message (the file changed since), separator lines
    frame the rest, as in any other file."""
    size = mbox.file_size(stream)
    window = Window(stream, max(start - mbox.BEHIND, 0), chunk, tick)
    if start >= size:
        return
    sep = _first(window, start)
    position = start
    while sep is not None and (stop is None or sep.start < stop):
        framed = _framed(window, sep, size)
        if framed is None:
            break
        yield framed[0]
        sep, position = framed[1], framed[0].end
    else:
        if sep is not None or position == size:  # the next region starts at `stop`, or the file ended
            return
    yield from mbox.iter_regions(stream, start=position, stop=stop, chunk=chunk, tick=tick)
