"""Parsing one byte segment of an mbox into counted-ready records: the unit of work of the parse workers.

Pure apart from reading the file: no database, no printing. Segments `[a, b)`, `[b, c)` tile the file exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ingester.mbox import mbox
from ingester.mbox.body_keys import HEADER_KEY, body_key
from ingester.mbox.lengths import iter_length_regions
from ingester.mbox.regions import Region
from ingester.mbox.takeout import Skip, judge_region
from ingester.records import MailRecord

# Small enough that a worker holds little (records of one segment: up to ~20,000 when messages are nothing but a
# separator and a header line), large enough that IPC is rare.
SEGMENT_BYTES = 1024 * 1024
# Reads of 64 KiB: the last region runs past the segment's end, and reading a whole segment's worth more just to
# find the next separator would double the bytes copied. Below glibc's mmap threshold (128 KiB), so the window's
# buffers come from the heap: 256 KiB reads mapped and unmapped fresh pages each time (~0.5 µs a message).
READ_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SegmentTask:
    path: str
    start: int
    stop: int | None
    first: bool
    include_spam_trash: bool
    now: float | None = None  # dates after a day past this are implausible
    length_framed: bool = False  # the file is Content-Length framed, and `start` is a true message start


@dataclass(slots=True)
class SegmentResult:
    """What a segment held. `end` is where its last region ends (None when no region starts in it); `starts[i]`
    is the offset of `records[i]`'s region (it ends `size_bytes` later)."""

    start: int
    records: list[MailRecord] = field(default_factory=list)
    seen: int = 0
    skipped: int = 0
    excluded: int = 0
    warnings: list[str] = field(default_factory=list)
    end: int | None = None
    starts: list[int] = field(default_factory=list)

    def __reduce__(self) -> tuple[Any, ...]:
        """Records cross the worker pipe as plain tuples: a NamedTuple pickles through a Python-level
        `__getnewargs__` per record, which cost the workers more than a tenth of a second per 200,000 messages."""
        rows = [tuple(record) for record in self.records]
        fields = (self.start, rows, self.seen, self.skipped, self.excluded, self.warnings, self.end, self.starts)
        return (_rebuilt, fields)


def _rebuilt(
    start: int,
    rows: list[tuple[Any, ...]],
    seen: int,
    skipped: int,
    excluded: int,
    warnings: list[str],
    end: int | None,
    starts: list[int],
) -> SegmentResult:
    return SegmentResult(start, list(map(MailRecord._make, rows)), seen, skipped, excluded, warnings, end, starts)


def plan_segments(
    path: Path,
    *,
    start: int,
    size: int,
    include_spam_trash: bool,
    segment_bytes: int = SEGMENT_BYTES,
    now: float | None = None,
    length_cuts: tuple[int, ...] | None = None,
) -> list[SegmentTask]:
    """Consecutive tasks from `start` (0 or a separator offset) to `size`; the first one is not aligned.

    The last task runs to the end of the file, whatever its size by then. With `length_cuts` (the true message
    starts of a Content-Length framed file, `lengths.length_cuts`), every task starts at one, since only a whole
    file's walk knows which separators are inside a body; `start` is then one of the file's message starts.
    """
    if length_cuts is not None:
        bounds = [start, *(cut for cut in length_cuts if cut > start)]
        ends: list[int | None] = [*bounds[1:], None]
        return [
            SegmentTask(str(path), a, b, i == 0, include_spam_trash, now, length_framed=True)
            for i, (a, b) in enumerate(zip(bounds, ends, strict=True))
        ]
    bounds = list(range(start, size, segment_bytes)) or [start]
    last = len(bounds) - 1
    return [
        SegmentTask(str(path), a, None if i == last else a + segment_bytes, i == 0, include_spam_trash, now)
        for i, a in enumerate(bounds)
    ]


# Words a separator's shape is judged by; every other word of a suspect line is masked in its warning.
_SHAPE_WORDS = frozenset(
    b"From Mon Tue Wed Thu Fri Sat Sun Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec June July Sept".split()
)
_WORD_OR_DIGIT = re.compile(rb"[A-Za-z]+|\d")


def masked_line(line: bytes, *, keep: int = 100) -> str:
    """The shape of a suspect line with its words and digits masked (`From  9999@xxx Fri Dec 99 …`).

    Such a line may be message text (`From Monday 3 …` after a blank line), and warnings are stored with the run:
    only weekday and month names, `From`, blanks and punctuation are kept; the byte range says where to look.
    """

    def mask(match: re.Match[bytes]) -> bytes:
        word = match.group()
        return b"9" if word.isdigit() else word if word in _SHAPE_WORDS else b"x"

    shape = _WORD_OR_DIGIT.sub(mask, line[:keep]).decode("latin-1")
    return repr("".join(c if c.isascii() and c.isprintable() else "?" for c in shape)) + ("…" * (len(line) > keep))


def _why_skipped(region: Region) -> str:
    if region.suspect:
        return (
            "a line that looks like a separator of an unknown shape starts a message that is not counted "
            f"(letters and digits masked, as it may be message text): {masked_line(region.suspect_line)}"
        )
    if region.postmark is None:
        return "no valid header line (text before the first separator line)"
    if region.header_cut:
        return (
            f"its header block runs past {mbox.HEADER_CAP_BYTES // (1024 * 1024)} MiB, so its From, Message-ID "
            "and labels may lie beyond what is read"
        )
    return "no valid header line"


def parse_segment(task: SegmentTask, tick: Callable[[], None] | None = None) -> SegmentResult:
    """The segment's records, skips and warnings; `tick` is called before every read of the file (may raise)."""
    with open(task.path, "rb", buffering=0) as stream, open(task.path, "rb", buffering=0) as bodies:
        return _parse(task, stream, bodies, tick)


def _parse(task: SegmentTask, stream: BinaryIO, bodies: BinaryIO, tick: Callable[[], None] | None) -> SegmentResult:
    """`bodies`, a second handle, reads the body of an id-less message outside Takeout for its key."""
    result = SegmentResult(start=task.start)
    records, starts = result.records, result.starts
    regions = (
        iter_length_regions(stream, start=task.start, stop=task.stop, chunk=READ_BYTES, tick=tick)
        if task.length_framed
        else mbox.iter_regions(
            stream, start=task.start, stop=task.stop, align=not task.first, chunk=READ_BYTES, tick=tick
        )
    )
    for region in regions:
        verdict = judge_region(
            region, include_spam_trash=task.include_spam_trash, warnings=result.warnings, now=task.now
        )
        if type(verdict) is MailRecord:
            if verdict.mail_id.startswith(HEADER_KEY):  # two such messages with the same headers are still two
                verdict = verdict._replace(mail_id=body_key(bodies, region, verdict.mail_id))
            records.append(verdict)
            starts.append(region.start)
            result.seen += 1
        elif verdict is Skip.EXCLUDED:
            result.excluded += 1
            result.seen += 1
        else:
            result.skipped += 1
            result.warnings.append(f"skipped bytes {region.start}-{region.end}: {_why_skipped(region)}")
        result.end = region.end
    return result
