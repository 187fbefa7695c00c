"""Issue 20's crafted mail inside a large archive, through the real CLI and real signals: exact counts, never a
traceback, a resume that always finishes; a crafted line that cannot stall the in-process parse or deafen it."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingester.mbox.mbox import HEADER_CAP_BYTES, iter_regions
from ingester.mbox.parse_pool import parse_in_order
from ingester.mbox.segments import READ_BYTES, SEGMENT_BYTES, parse_segment, plan_segments
from ingester.runs.lifecycle import RunCancelled
from shared.mbox_format import suspect_line_end
from tests.conftest import REPO_ROOT, run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, query
from tests.support.polling import wait_for
from tests.support.processes import kill_when, start_import

# (From value, the key it must count under): issue 20's lone-surrogate words and its impersonations.
CRAFTED = [
    ("=?utf-7?Q?+2AA-?= <a@b.example>", "a@b.example"),
    ("=?UTF-7?B?KzJBQS0=?= <a@b.example>", "a@b.example"),
    ("=?utf7?Q?+2AA-?= <a@b.example>", "a@b.example"),
    ("=?unicode-1-1-utf-7?Q?+2AA-?= <a@b.example>", "a@b.example"),
    ("=?punycode?Q?a-l75g?= <a@b.example>", "a@b.example"),
    ("=?utf-8?q?ceo=40bank=2Eexample?= <spammer@evil.example>", "spammer@evil.example"),
    ("=?utf-8?b?PGNlb0BiYW5rLmV4YW1wbGU+?= <spammer@evil.example>", "spammer@evil.example"),
    ("=?utf-8?q?Doe=2C_John_=3Cjd=40other.example=3E?= <john@x.example>", "john@x.example"),
]
CRAFTED_LABELS = "=?utf-7?Q?+2AA-?=,Inbox"


def _crafted(n: int, sender: str, labels: str) -> bytes:
    return (
        b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nX-Gmail-Labels: %s\nFrom: %s\nMessage-ID: <crafted%d@x>\n"
        b"Date: Fri, 04 Dec 2020 20:33:24 +0000\n\nbody\n" % (2 * 10**18 + n, labels.encode(), sender.encode(), n)
    )


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int], int]:
    """~60 MB of generated Takeout mail with the crafted messages spread through it (and one excluded as Spam)."""
    path = tmp_path_factory.mktemp("hostile") / "takeout.mbox"
    expected = write_mbox(path, generate_messages(count=60_000, body_bytes=200))
    generated = path.read_bytes()
    cuts = [
        generated.find(b"\nFrom 1", len(generated) * (k + 1) // (len(CRAFTED) + 2)) + 1 for k in range(len(CRAFTED))
    ]
    pieces, last = [], 0
    for n, (cut, (sender, key)) in enumerate(zip(cuts, CRAFTED, strict=True)):
        pieces += [generated[last:cut], _crafted(n, sender, CRAFTED_LABELS)]
        expected[key] = expected.get(key, 0) + 1
        last = cut
    pieces += [generated[last:], _crafted(99, "=?utf-7?Q?+2AA-?= <spam@evil.example>", "=?punycode?Q?a-l75g?=,Spam")]
    path.write_bytes(b"".join(pieces))
    return path, expected, sum(expected.values())


def _run(db: Path) -> dict[str, Any]:
    columns = (
        "state, outcome, messages_seen, messages_new, messages_skipped, messages_excluded, bytes_done, bytes_total"
    )
    (row,) = query(db, f"SELECT {columns} FROM ingest_runs ORDER BY run_id DESC LIMIT 1")
    return dict(zip(columns.split(", "), row, strict=True))


def test_crafted_mail_in_a_large_archive_counts_exactly(
    tmp_path: Path, archive: tuple[Path, dict[str, int], int]
) -> None:
    path, expected, total = archive
    db = tmp_path / "stats.db"
    result = run_cli("import", path, "--db", db, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert counts_of(db) == expected
    run = _run(db)
    assert (run["state"], run["outcome"], run["messages_new"], run["messages_skipped"]) == (
        "done",
        "complete",
        total,
        0,
    )
    assert (run["messages_excluded"], run["bytes_done"]) == (1, path.stat().st_size)  # the crafted Spam
    again = run_cli("import", path, "--db", db, timeout=300)  # a fresh import of the same file adds nothing
    assert again.returncode == 0, again.stderr
    assert counts_of(db) == expected and _run(db)["messages_new"] == 0


def test_a_killed_import_of_the_archive_resumes_to_exact_counts(
    tmp_path: Path, archive: tuple[Path, dict[str, int], int]
) -> None:
    path, expected, total = archive
    db = tmp_path / "stats.db"
    process = start_import(db, path)
    # Killed past the first crafted message's batch, before the end: the resume must get past the rest.
    kill_when(process, lambda: db.exists() and 0 < int(_progress(db)) < path.stat().st_size, what="progress")
    resumed = run_cli("import", path, "--db", db, "--resume", "1", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert counts_of(db) == expected
    run = _run(db)
    assert (run["state"], run["outcome"], run["bytes_done"]) == ("done", "complete", path.stat().st_size)
    assert run["messages_seen"] == total + run["messages_excluded"]


def _progress(db: Path) -> int:
    try:
        rows = query(db, "SELECT bytes_done FROM ingest_runs ORDER BY run_id DESC LIMIT 1")
    except Exception:  # the file is still being created
        return 0
    return int(rows[0][0]) if rows else 0


# Issue 20's generator: a lazy-run regex backtracked on each such line for seconds.
CRAFTED_LINE = b"From x " + b"Mon " * 170 + b"1" * 680 + b"\n" + b"a" * 680 + b"\n"


MESSAGES = 200_000


def test_sigterm_stops_an_in_process_parse_of_crafted_lines(tmp_path: Path) -> None:
    """In-process parsing (`GMAIL_STATS_PARSE_WORKERS=0`) hears SIGTERM: the run ends `cancelled` part-way, then a
    resume finishes it. ~30 MB: 200,000 messages, every 1,000th with 20 crafted lines after a blank line (4,000
    in all, each seconds of work for the old check)."""
    path = tmp_path / "crafted.mbox"
    crafted = b"\n" + CRAFTED_LINE * 20
    path.write_bytes(
        b"".join(
            b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: s%d@example.com\nMessage-ID: <%d@x>\n\nshort\n%s"
            % (10**18 + n, n % 50, n, crafted if n % 1000 == 999 else b"")
            for n in range(MESSAGES)
        )
    )
    db = tmp_path / "stats.db"
    process = start_import(db, path, GMAIL_STATS_PARSE_WORKERS="0")
    try:
        wait_for(lambda: db.exists() and _progress(db) > 0, timeout=120, what="a first commit")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)  # the old parse would have ignored it for hours
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr
    run = _run(db)
    assert run["state"] == "cancelled", stderr
    assert int(str(run["bytes_done"])) < path.stat().st_size
    resumed = run_cli("import", path, "--db", db, "--resume", "1", timeout=300, GMAIL_STATS_PARSE_WORKERS="0")
    assert resumed.returncode == 0, resumed.stderr
    assert sum(counts_of(db).values()) == MESSAGES and _run(db)["outcome"] == "complete"


# The rule for one line as a backtracking regex, a reference of meaning: the linear check must agree with it on
# every line followed by a header line (blanks after `From` skipped; a day or month name glued to the word before
# it counts, as a flipped blank leaves it). A pair of lines split by a flipped byte is tested in test_framing_edges.
_ONE_LINE_SUSPECT = re.compile(
    rb"From [ \t\r]*[^ \t\r\n][^\n]*?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    rb"(?![a-z])[^\n]*?\d[^\n]*\n[!-9;-~]+[ \t]*:"
)
_HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:")
_pieces = st.sampled_from(
    [
        b"From ",
        b"From",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"Mon",
        b"Dec",
        b"Monday",
        b"xMon",
        b"1",
        b"a",
        b":",
        b"X-Y",
        b"\x0c",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_pieces, max_size=14).map(b"".join), st.integers(min_value=0, max_value=40))
def test_the_linear_suspect_check_means_what_the_regex_meant(tail: bytes, cut: int) -> None:
    data = b"From " + tail
    limit = min(len(data), 5 + cut)
    line_end = data.find(b"\n", 0, limit)
    if line_end == -1 or _HEADER_LINE.match(data, line_end + 1, limit) is None:
        return  # no header line after the first: the two-line rule's case
    expected = None if _ONE_LINE_SUSPECT.match(data, 0, limit) is None else line_end
    assert suspect_line_end(data, 0, limit) == expected


@pytest.mark.parametrize("labels_at_end", [b"Spam", b"Inbox"])
def test_a_header_block_past_the_cap_is_skipped_with_a_warning(
    tmp_path: Path, db_path: Path, labels_at_end: bytes
) -> None:
    huge = b"X-Gmail-Labels: " + b"x," * (HEADER_CAP_BYTES // 2) + labels_at_end + b"\n"
    first = b"From 1@xxx Fri Dec 04 20:33:24 +0000 2020\n" + huge + b"From: a@b.c\nMessage-ID: <1@x>\n\nbody\n"
    second = b"From 2@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: b@b.c\nMessage-ID: <2@x>\n\nbody\n"
    (cut, fine) = iter_regions(io.BytesIO(first + second))
    assert (cut.header_cut, len(cut.header_block), fine.header_cut) == (True, HEADER_CAP_BYTES, False)
    path = tmp_path / "huge.mbox"
    path.write_bytes(first + second)
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert counts_of(db_path) == {"b@b.c": 1}  # never "(no sender)", never counted against its labels
    ((state, outcome, skipped, tail),) = query(
        db_path, "SELECT state, outcome, messages_skipped, warnings_tail FROM ingest_runs"
    )
    assert (state, outcome, skipped) == ("done", "partial", 1)
    assert f"skipped bytes 0-{len(first)}: its header block runs past 4 MiB" in tail


def test_a_segment_inside_a_huge_message_reads_only_its_own_bytes(tmp_path: Path) -> None:
    """Each 1 MiB segment of one 24 MiB message stops at its own end (it used to read on to the message's end, so
    the import took time in the square of the message's size); counted as the reads a tick sees."""
    path = tmp_path / "huge.mbox"
    body = (b"x" * 99 + b"\n") * (24 * 1024 * 1024 // 100)
    head = b"From 1@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: a@b.c\nMessage-ID: <1@x>\n\n"
    tail = b"From 2@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: b@b.c\nMessage-ID: <2@x>\n\nend\n"
    path.write_bytes(head + body + tail)
    tasks = plan_segments(path, start=0, size=path.stat().st_size, include_spam_trash=False)
    reads: list[int] = []
    results = []
    for task in tasks:
        ticks: list[None] = []
        results.append(parse_segment(task, lambda: ticks.append(None)))  # noqa: B023 (called before the next loop)
        reads.append(len(ticks))
    assert [len(r.records) for r in results].count(1) == 2 and sum(r.seen for r in results) == 2
    assert results[0].end == len(head) + len(body)  # the message's own segment still reads it whole, once
    middle = reads[1:-1]
    assert middle and max(middle) <= SEGMENT_BYTES // READ_BYTES + 2


def test_the_in_process_parse_calls_idle_from_inside_a_segment_and_stops_when_it_raises(tmp_path: Path) -> None:
    """One task, parsed in-process: `idle` (beat, cancel check) runs between reads, not only between segments."""
    path = tmp_path / "one.mbox"
    head = b"From 1@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: a@b.c\nMessage-ID: <1@x>\n\n"
    path.write_bytes(head + (b"x" * 99 + b"\n") * 40_000)  # 4 MB: one message, one task
    (task,) = plan_segments(path, start=0, size=path.stat().st_size, include_spam_trash=False, segment_bytes=1 << 30)
    seconds = iter(range(10**6))  # a clock a second further on at each look: every read is due for `idle`
    calls: list[None] = []

    def idle() -> None:
        calls.append(None)
        if len(calls) == 3:
            raise RunCancelled()

    with pytest.raises(RunCancelled):
        list(parse_in_order([task], workers=0, idle=idle, clock=lambda: float(next(seconds))))
    assert len(calls) == 3
    (result,) = parse_in_order([task], workers=0, idle=lambda: None)
    assert result.seen == 1


def test_parse_workers_import_no_database_code() -> None:
    """Each worker counts against the 150 MB bound of the process tree: SQLAlchemy alone would add ~20 MB."""
    probe = (
        "import sys, ingester.mbox.parse_worker; print(sorted(m for m in sys.modules if m.startswith('sqlalchemy')))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert result.stdout.strip() == "[]"
