"""Parallel parsing: segments parsed by real child processes add up to exactly one in-process pass; and, as
properties over generated mboxes, one pass parses back with the same count, order and offsets, and aligned segments
of any size tile it exactly as that pass does."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingester.mbox.mbox import iter_regions
from ingester.mbox.parse_pool import parse_in_order
from ingester.mbox.regions import Region
from ingester.mbox.segments import SegmentResult, plan_segments
from ingester.records import MailRecord
from tests.support.factories import generate_messages, write_mbox
from tests.support.processes import parse_workers_alive

SEP_PLAIN = b"From MAILER-DAEMON Thu Jan  1 00:00:00 2020\n"


def regions(data: bytes, chunk: int = 8 * 1024 * 1024) -> list[Region]:
    return list(iter_regions(io.BytesIO(data), start=0, chunk=chunk))


def _flatten(results: list[SegmentResult]) -> tuple[list[MailRecord], int, int, int, list[int]]:
    records = [record for result in results for record in result.records]
    return (
        records,
        sum(r.seen for r in results),
        sum(r.excluded for r in results),
        sum(r.skipped for r in results),
        [r.end for r in results if r.end is not None][-1:],
    )


@pytest.mark.parametrize("segment_bytes", [997, 64 * 1024])
def test_parallel_segments_equal_one_in_process_pass(tmp_path: Path, segment_bytes: int) -> None:
    path = tmp_path / "mail.mbox"
    with path.open("wb") as handle:
        handle.write(b"preamble junk\n")
    with path.open("ab") as handle:
        for message in generate_messages(count=400, body_bytes=700, senders=30, spam_every=7):
            handle.write(message.raw)
    size = path.stat().st_size
    whole = plan_segments(path, start=0, size=size, include_spam_trash=False, segment_bytes=size * 2)
    assert len(whole) == 1
    expected = _flatten(list(parse_in_order(whole, workers=0, idle=lambda: None)))
    tasks = plan_segments(path, start=0, size=size, include_spam_trash=False, segment_bytes=segment_bytes)
    assert len(tasks) > 2
    parallel = _flatten(list(parse_in_order(tasks, workers=2, idle=lambda: None)))
    assert parallel == expected
    assert expected[1:4] == (400, 400 // 7, 1)
    assert not parse_workers_alive()


def test_resuming_from_a_separator_offset_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "mail.mbox"
    messages = list(generate_messages(count=10, body_bytes=50))
    write_mbox(path, messages)
    offset = sum(len(m.raw) for m in messages[:4])
    tasks = plan_segments(path, start=offset, size=path.stat().st_size, include_spam_trash=False, segment_bytes=300)
    results = list(parse_in_order(tasks, workers=2, idle=lambda: None))
    assert [r.rfc_message_id for res in results for r in res.records] == [m.message_id for m in messages[4:]]


def test_parse_workers_stay_small() -> None:
    """A parse worker imports neither SQLAlchemy nor pydantic: each worker's RSS counts against the import's."""
    code = "import sys, ingester.mbox.parse_worker; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "sqlalchemy" not in loaded and "pydantic" not in loaded


_body_line = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")),
    st.sampled_from([b"From here on", b">From x Fri Dec 04 20:33:24 2020", b"", b"\r", b"From  x"]),
)
_message = st.tuples(
    st.booleans(),  # CRLF
    st.lists(st.sampled_from([b"From: a@b.c", b"Message-ID: <x@y>", b"X: y", b" folded"]), max_size=4),
    st.lists(_body_line, max_size=6),
)


def _build(messages: list[tuple[bool, list[bytes], list[bytes]]]) -> tuple[bytes, list[int]]:
    out = bytearray()
    starts = []
    for crlf, headers, body in messages:
        starts.append(len(out))
        eol = b"\r\n" if crlf else b"\n"
        out += SEP_PLAIN.rstrip(b"\n") + eol
        out += b"".join(h + eol for h in headers)
        if body:
            out += eol + b"".join(line + eol for line in body)
    return bytes(out), starts


@settings(max_examples=200, deadline=None)
@given(st.lists(_message, min_size=1, max_size=8), st.sampled_from([1, 5, 33, 4096]))
def test_generated_mbox_parses_back_with_same_count_order_and_offsets(
    messages: list[tuple[bool, list[bytes], list[bytes]]], chunk: int
) -> None:
    data, starts = _build(messages)
    got = regions(data, chunk)
    assert [r.start for r in got] == starts
    assert [r.end for r in got] == [*starts[1:], len(data)]


# Bodies that provoke suspect lines too (a blank line, a near-separator, a header-like line).
_tricky_message = st.tuples(
    st.booleans(),
    st.lists(st.sampled_from([b"From: a@b.c", b"X: y", b" folded", b""]), max_size=4),
    st.lists(
        st.one_of(
            _body_line,
            st.sampled_from([b"", b"From bob Wed, 9 Feb 2000 23:15 +0100", b"X-Y: z", b"From x Fri Dec 04 2020"]),
        ),
        max_size=8,
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_tricky_message, min_size=1, max_size=8), st.integers(min_value=1, max_value=300))
def test_segments_tile_like_one_pass(messages: list[tuple[bool, list[bytes], list[bytes]]], step: int) -> None:
    data, _ = _build(messages)
    whole = [(r.start, r.end, r.header_block, r.suspect) for r in regions(data)]
    assert whole == [(r.start, r.end, r.header_block, r.suspect) for r in regions(data, chunk=3)]
    pieces = []
    for start in range(0, len(data), step):
        stream = io.BytesIO(data)
        pieces += [
            (r.start, r.end, r.header_block, r.suspect)
            for r in iter_regions(stream, start=start, stop=start + step, align=True, chunk=17)
        ]
    assert pieces == whole
