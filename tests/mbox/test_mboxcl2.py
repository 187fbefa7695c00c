"""mboxcl2 (issue 20): a file consistently framed by Content-Length counts an unescaped embedded message as part of
its message, across segment boundaries, with parse workers and on resume; one length that frames nothing keeps the
whole file framed by separator lines, with a warning."""

from __future__ import annotations

import io
import itertools
import json
import signal
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError

from ingester.mbox.lengths import iter_length_regions, length_cuts
from ingester.mbox.mbox import iter_regions
from ingester.mbox.segments import READ_BYTES, SEGMENT_BYTES, parse_segment, plan_segments
from tests.conftest import run_cli
from tests.support.factories import mboxcl2_message
from tests.support.importing import counts_of, query
from tests.support.processes import start_import, wait_until


@dataclass
class Written:
    """What a test file holds: each message's start, and per sender its count and bytes."""

    size: int = 0
    starts: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def _write(path: Path, messages: list[tuple[str, bytes]]) -> Written:
    written = Written()
    with path.open("wb") as handle:
        for sender, raw in messages:
            written.starts.append(written.size)
            written.counts[sender] = written.counts.get(sender, 0) + 1
            written.sizes[sender] = written.sizes.get(sender, 0) + len(raw)
            handle.write(raw)
            written.size += len(raw)
    return written


def _assert_exact(db: Path, written: Written) -> None:
    assert counts_of(db) == written.counts
    assert dict(query(db, "SELECT sender, bytes FROM senders WHERE mails_sent > 0")) == written.sizes
    runs = query(db, "SELECT state, outcome, bytes_done, messages_seen, warnings_count FROM ingest_runs")
    assert runs == [("done", "complete", written.size, len(written.starts), 0)]


def _digests(count: int, *, every: int, embedded: int) -> list[tuple[str, bytes]]:
    return [mboxcl2_message(i, embedded=embedded if i % every == 1 else 0) for i in range(count)]


def test_a_consistent_file_counts_each_embedded_message_as_part_of_its_own(tmp_path: Path, db_path: Path) -> None:
    messages = [mboxcl2_message(0), mboxcl2_message(1, embedded=1), mboxcl2_message(2), mboxcl2_message(3, embedded=3)]
    path = tmp_path / "mboxcl2.mbox"
    written = _write(path, messages)
    assert len(list(iter_regions(io.BytesIO(path.read_bytes())))) == 8  # separator lines alone would see 8
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    _assert_exact(db_path, written)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_the_walk_finds_every_true_message_start(newline: bytes) -> None:
    data = b"\xef\xbb\xbf" + b"".join(mboxcl2_message(i, embedded=i % 3, newline=newline)[1] for i in range(9))
    regions = list(iter_length_regions(io.BytesIO(data), start=0, stop=None, chunk=37))
    assert len(regions) == 9 and regions[-1].end == len(data)
    assert all(a.end == b.start for a, b in itertools.pairwise(regions))
    cuts = length_cuts(io.BytesIO(data), segment_bytes=1, chunk=37)
    assert cuts == tuple(r.start for r in regions)
    # A resume offset that is no message start of this framing (an inner separator) keeps separator framing.
    inner = data.index(b"From inner")
    assert length_cuts(io.BytesIO(data), segment_bytes=1, chunk=37, resume_at=inner) is None
    assert length_cuts(io.BytesIO(data[: -len(newline)]), segment_bytes=1, chunk=37) == cuts  # no last blank line


def test_from_a_length_that_no_longer_frames_its_message_separators_frame_the_rest() -> None:
    """The file changed after the walk judged it: a worker never loses or doubles a byte of its segment."""
    changed = mboxcl2_message(2, embedded=1)[1].replace(b"Content-Length: ", b"Content-Length: 1")
    data = mboxcl2_message(0)[1] + mboxcl2_message(1)[1] + changed + mboxcl2_message(3)[1]
    regions = list(iter_length_regions(io.BytesIO(data), start=0, stop=None, chunk=64))
    assert [r.length_framed for r in regions] == [True, True, False, False, False]
    assert regions[0].start == 0 and regions[-1].end == len(data)
    assert all(a.end == b.start for a, b in itertools.pairwise(regions))


def test_one_length_that_frames_nothing_keeps_separator_framing_for_the_whole_file(
    tmp_path: Path, db_path: Path
) -> None:
    sender, last = mboxcl2_message(9)
    wrong = last.replace(b"Content-Length: 18", b"Content-Length: 5")
    assert wrong != last
    messages = [mboxcl2_message(0), mboxcl2_message(1, embedded=1), mboxcl2_message(2), (sender, wrong)]
    path = tmp_path / "inconsistent.mbox"
    written = _write(path, messages)
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    # The embedded message, far from the wrong length, counts on its own, as in any file framed by separators.
    assert counts_of(db_path) == {**written.counts, "inner0@example.net": 1}
    ((tail,),) = query(db_path, "SELECT warnings_tail FROM ingest_runs")
    second, fourth = written.starts[1], written.starts[3]
    inner = path.read_bytes().index(b"From inner1.0")
    stated = int(messages[1][1].split(b"Content-Length: ")[1].split(b"\n")[0])
    assert json.loads(tail) == [
        f"bytes {second}-{inner}: Content-Length says {stated:,} bytes but "
        "separator lines frame a body of 17; counted as framed (a separator-like line inside it may start "
        "another counted message)",
        f"bytes {fourth}-{written.size}: Content-Length says 5 bytes but separator lines frame a body of 19; "
        "counted as framed (a separator-like line inside it may start another counted message)",
    ]


@pytest.fixture(scope="module")
def digest_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Written]:
    """About 6 MiB in which every segment boundary lies inside a digest of unescaped messages."""
    path = tmp_path_factory.mktemp("cl2") / "digests.mbox"
    written = _write(path, _digests(800, every=4, embedded=300))
    inside = [
        k * SEGMENT_BYTES
        for k in range(1, written.size // SEGMENT_BYTES + 1)
        if k * SEGMENT_BYTES not in written.starts
    ]
    assert len(inside) == written.size // SEGMENT_BYTES
    assert len(list(iter_regions(io.BytesIO(path.read_bytes())))) > 50_000  # separator lines would see 60,800
    return path, written


def test_segments_start_at_true_message_starts_only(digest_file: tuple[Path, Written]) -> None:
    path, written = digest_file
    with path.open("rb") as stream:
        cuts = length_cuts(stream, segment_bytes=SEGMENT_BYTES, chunk=READ_BYTES)
    assert cuts is not None and set(cuts) <= set(written.starts) and len(cuts) > 5
    tasks = plan_segments(path, start=0, size=written.size, include_spam_trash=False, length_cuts=cuts)
    results = [parse_segment(task) for task in tasks]
    assert [r.end for r in results[:-1]] == [t.start for t in tasks[1:]] and results[-1].end == written.size
    assert [s for r in results for s in r.starts] == written.starts
    assert sum(r.seen for r in results) == len(written.starts) and not any(r.warnings for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_digest_file_imports_exactly_in_process_and_with_workers(
    tmp_path: Path, digest_file: tuple[Path, Written], workers: str
) -> None:
    path, written = digest_file
    db = tmp_path / "stats.db"
    result = run_cli("import", path, "--db", db, GMAIL_STATS_PARSE_WORKERS=workers)
    assert result.returncode == 0, result.stderr
    _assert_exact(db, written)


@pytest.mark.slow
def test_a_resume_in_the_middle_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "big.mbox"
    written = _write(path, _digests(120_000, every=20, embedded=4))
    db = tmp_path / "stats.db"
    process = start_import(db, path)

    def committed() -> int:
        try:
            rows = query(db, "SELECT bytes_done FROM ingest_runs WHERE state = 'running'") if db.exists() else []
        except (sqlite3.Error, DBAPIError):  # not created or not migrated yet
            return 0
        return int(rows[0][0]) if rows else 0

    assert wait_until(lambda: committed() > 0, timeout=120), "the import never committed"
    process.send_signal(signal.SIGSTOP)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGCONT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    ((state, done),) = query(db, "SELECT state, bytes_done FROM ingest_runs")
    assert state == "cancelled" and 0 < done < written.size and done in written.starts
    resumed = run_cli("import", path, "--db", db, "--resume", "1", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    _assert_exact(db, written)
