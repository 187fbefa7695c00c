"""Parallel parsing: segments parsed by real child processes add up to exactly one in-process pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ingester.mbox.parse_pool import parse_in_order
from ingester.mbox.segments import SegmentResult, plan_segments
from ingester.records import MailRecord
from tests.support.factories import generate_messages, write_mbox
from tests.support.processes import parse_workers_alive


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
