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
from ingester.mbox.mbox import Region, Window
from shared.mbox_format import SEPARATOR_WINDOW

# One `Content-Length: <digits>` line, unfolded: anything else (two of them, a folded or non-decimal value)
# makes the file one that is not Content-Length framed, which is always the safe verdict.
_LENGTH_LINE = re.compile(rb"(?:^|\n)content-length[ \t]*:[ \t]*([0-9]{1,18})[ \t]*\r?(?=\n|$)", re.IGNORECASE)
_LENGTH_NAME = re.compile(rb"(?:^|\n)content-length[ \t]*:", re.IGNORECASE)
# What may lie between a body's stated end and the next separator: nothing, or the blank line mboxcl2 writers add.
_GAPS = (b"", b"\n", b"\r\n")


def stated_length(header_block: bytes) -> int | None:
    """The body length a header block states, when it states exactly one in plain decimal."""
    found = _LENGTH_LINE.search(header_block)
    if found is None or len(_LENGTH_NAME.findall(header_block)) != 1:
        return None
    return int(found.group(1))


def _framed(window: Window, start: int, size: int) -> Region | None:
    """The message at separator `start` framed by its Content-Length, or None when that does not frame it exactly:
    no or an unreadable length, no blank line after the header block, or no separator (or the end of the file)
    right after the stated body."""
    sep = mbox.separator_at(window, start, keep_from=start) or mbox.bom_separator(window, start)
    if sep is None or sep.postmark is None:
        return None
    header, following, cut = mbox.read_header(window, sep)
    stated = stated_length(header) if following is None and not cut else None
    if stated is None:
        return None
    blank = b"\r\n" if header.endswith(b"\r\n") else b"\n"  # as `takeout._length_note` measures a body
    body_start = sep.header_start + len(header) + len(blank)
    window.ensure(body_start, keep_from=start)
    if window.slice(body_start - len(blank), body_start) != blank:
        return None
    body_end = body_start + stated
    if body_end > size:
        return None
    keep = body_end - 1 - mbox.BEHIND
    window.jump(keep)  # a long body is skipped, never read
    window.ensure(body_end + len(_GAPS[-1]) + SEPARATOR_WINDOW, keep_from=keep)
    for gap in _GAPS:
        end = body_end + len(gap)
        if window.slice(body_end, end) != gap:
            continue
        if end == size or (window.slice(end - 1, end) == b"\n" and _separator_follows(window, end)):
            return Region(start, end, sep.postmark, header, length_framed=True)
    return None


def _separator_follows(window: Window, line_start: int) -> bool:
    found = mbox.separator_at(window, line_start, keep_from=line_start - 1 - mbox.BEHIND)
    return found is not None and found.postmark is not None


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
    position, next_cut, resumable = 0, 0, resume_at == 0
    while position < size:
        region = _framed(window, position, size)
        if region is None:
            return None
        if position >= next_cut or position == resume_at:
            cuts.append(position)
            next_cut = (position // segment_bytes + 1) * segment_bytes
        resumable = resumable or position == resume_at
        position = region.end
    return tuple(cuts) if cuts and resumable else None


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
    position = start
    while position < size and (stop is None or position < stop):
        region = _framed(window, position, size)
        if region is None:
            yield from mbox.iter_regions(stream, start=position, stop=stop, chunk=chunk, tick=tick)
            return
        yield region
        position = region.end
