"""Framing edges of issue 20: zones of any length, four-letter months, a leading byte order mark, a flipped blank in
a separator (reported, not merged), and a pipe refused with the sentence that says what to do."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingester.mbox.mbox import iter_regions
from ingester.mbox.segments import masked_line
from shared.mbox_format import SEPARATOR, separator_date, sniff_mbox
from tests.conftest import run_cli
from tests.support.importing import counts_of, query

FEB_9_1998 = 886986334  # Wed Feb  9 01:05:34 1998 UTC


@pytest.mark.parametrize(
    ("line", "unix"),
    [
        (b"From bob@example.com Wed Feb  9 01:05:34 1998 WETDST", FEB_9_1998),  # unknown zone: read as UTC
        (b"From bob@example.com Wed Feb  9 01:05:34 WETDST 1998", FEB_9_1998),
        (b"From bob@example.com Tue June  9 01:05:34 1998", FEB_9_1998 + 120 * 86400),
        (b"From bob@example.com Thu July  9 01:05:34 1998 +0000", FEB_9_1998 + 150 * 86400),
        (b"From bob@example.com Wed Sept  9 01:05:34 1998", FEB_9_1998 + 212 * 86400),
    ],
)
def test_separators_with_long_zones_and_four_letter_months(line: bytes, unix: int) -> None:
    match = SEPARATOR.match(line)
    assert match is not None and separator_date(match) == unix


@pytest.mark.parametrize("line", [b"From bob@example.com Wed Junk  9 01:05:34 1998", b"From b Wed Feb 9 1:05 98"])
def test_what_is_still_no_separator(line: bytes) -> None:
    assert SEPARATOR.match(line) is None


def _message(n: int, *, separator: bytes | None = None) -> bytes:
    line = separator or b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020" % (10**18 + n)
    return line + b"\nFrom: s%d@example.com\nMessage-ID: <%d@x>\n\nbody\n\n" % (n, n)


def test_a_leading_byte_order_mark_costs_no_message(tmp_path: Path, db_path: Path) -> None:
    data = b"\xef\xbb\xbf" + _message(1) + _message(2)
    assert sniff_mbox(io.BytesIO(b"\xef\xbb\xbf" + _message(1))).problem is None
    regions = list(iter_regions(io.BytesIO(data)))
    assert [(r.start, r.postmark is not None) for r in regions] == [(0, True), (len(_message(1)) + 3, True)]
    path = tmp_path / "bom.mbox"
    path.write_bytes(data)
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert counts_of(db_path) == {"s1@example.com": 1, "s2@example.com": 1}
    assert query(db_path, "SELECT outcome, messages_skipped, warnings_count FROM ingest_runs") == [("complete", 0, 0)]


def test_a_separator_with_a_doubled_blank_is_reported_not_merged(tmp_path: Path, db_path: Path) -> None:
    flipped = b"From  1000000000000000002@xxx Fri Dec 04 20:33:24 +0000 2020"
    first = _message(1)
    path = tmp_path / "flipped.mbox"
    path.write_bytes(first + _message(2, separator=flipped) + _message(3))
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert counts_of(db_path) == {"s1@example.com": 1, "s3@example.com": 1}
    ((outcome, skipped, tail),) = query(db_path, "SELECT outcome, messages_skipped, warnings_tail FROM ingest_runs")
    assert (outcome, skipped) == ("partial", 1)
    (warning,) = json.loads(tail)
    assert warning == (
        f"skipped bytes {len(first)}-{len(first) + len(_message(2, separator=flipped))}: a line that looks like a "
        "separator of an unknown shape starts a message that is not counted (letters and digits masked, as it may "
        "be message text): 'From  9999999999999999999@x Fri Dec 99 99:99:99 +9999 9999'"
    )


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (b"From Monday 3 on we meet at J\xc3\xa9r\xc3\xb4me's", '"From x 9 x x x x x??x??x\'x"'),
        (b"From: Tue 9\x00\x1b[2J", "'From: Tue 9??[9x'"),
        (b"From " + b"a" * 300, "'From x'…"),
        (b"From Sept 1st, June July", "'From Sept 9x, June July'"),
    ],
)
def test_a_suspect_line_is_quoted_as_its_shape_never_its_words(line: bytes, shown: str) -> None:
    assert masked_line(line) == shown


SEPARATORS = [
    b"From 1000000000000000002@xxx Fri Dec 04 20:33:24 +0000 2020",  # Takeout
    b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011",
    b"From bob@example.com Tue Feb  9 01:05:34 1998",
]


def _flips(line: bytes) -> Iterator[bytes]:
    """Every one-byte change after `From `: a blank, a newline, a letter, a digit or a tab in its place, deleted or
    doubled blank."""
    for pos in range(5, len(line)):
        for value in (b" ", b"\n", b"x", b"0", b"\t", b"", b"  "):
            yield line[:pos] + value + line[pos + 1 :]


@pytest.mark.parametrize("separator", SEPARATORS)
def test_no_single_byte_flip_of_a_separator_merges_two_messages_silently(separator: bytes) -> None:
    merged = []
    for flipped in _flips(separator):
        data = _message(1, separator=separator) + _message(2, separator=flipped) + _message(3, separator=separator)
        regions = list(iter_regions(io.BytesIO(data)))
        # The flipped message is counted (still a separator) or its region is reported, never folded into the first.
        if sum(1 for r in regions if r.suspect or r.postmark is not None) != 3:
            merged.append(flipped)
    assert merged == []


def test_a_pipe_is_refused_with_what_to_do(tmp_path: Path, db_path: Path) -> None:
    pipe = tmp_path / "mail.mbox"
    os.mkfifo(pipe)
    result = run_cli("import", pipe, "--db", db_path)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"gmail-stats: {pipe}: a pipe or device, not a file; the import reads at byte offsets (in parallel, and to "
        "resume), so save the mbox to a file first, e.g. `zcat mail.mbox.gz > mail.mbox`"
    )
    assert not db_path.exists() or query(db_path, "SELECT count(*) FROM ingest_runs") == [(0,)]


def test_an_id_less_message_has_one_key_with_or_without_a_byte_order_mark(tmp_path: Path, db_path: Path) -> None:
    plain = b"From bob@example.com Wed Feb  9 01:05:34 1998\nFrom: a@x\n\nthe same body\n"
    (tmp_path / "a.mbox").write_bytes(plain)
    (tmp_path / "b.mbox").write_bytes(b"\xef\xbb\xbf" + plain)
    for name in ("a.mbox", "b.mbox"):
        result = run_cli("import", tmp_path / name, "--db", db_path)
        assert result.returncode == 0, result.stderr
    assert counts_of(db_path) == {"a@x": 1}
    ((key,),) = query(db_path, "SELECT mail_id FROM seen_mails")
    assert key.startswith("hdb:")


def test_a_content_length_that_disagrees_with_the_framing_is_a_warning(tmp_path: Path, db_path: Path) -> None:
    inner = b"From: b@x\nMessage-ID: <2@x>\n\ninner body\n"
    body = b"forwarded:\n\nFrom inner@x Wed Feb  9 01:05:34 1998\n" + inner
    outer = b"From a@x Wed Feb  9 01:05:34 1998\nFrom: a@x\nMessage-ID: <1@x>\nContent-Length: %d\n\n" % len(body)
    agreeing = b"From a@x Wed Feb  9 01:05:34 1998\nFrom: c@x\nMessage-ID: <3@x>\nContent-Length: 6\n\nhello\n\n"
    crlf = agreeing.replace(b"\n", b"\r\n").replace(b"<3@x>", b"<4@x>").replace(b"c@x", b"d@x")
    unstated = b"From a@x Wed Feb  9 01:05:34 1998\nFrom: e@x\nMessage-ID: <5@x>\n\nno length stated\n"
    path = tmp_path / "mboxcl2.mbox"
    path.write_bytes(outer + body + b"\n" + agreeing + crlf.replace(b"Length: 6", b"Length: 7") + unstated)
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    # One message states no length, so the file is not Content-Length framed throughout (tests/mbox/test_mboxcl2.py):
    # framed by separator lines, the embedded message counts on its own, and the run says so.
    assert counts_of(db_path) == {"a@x": 1, "b@x": 1, "c@x": 1, "d@x": 1, "e@x": 1}
    ((tail,),) = query(db_path, "SELECT warnings_tail FROM ingest_runs")
    first_end = len(outer) + len(b"forwarded:\n\n")
    assert json.loads(tail) == [
        f"bytes 0-{first_end}: Content-Length says {len(body):,} bytes but separator lines frame a body of 12; "
        "counted as framed (a separator-like line inside it may start another counted message)"
    ]
