"""Takeout framing rules 1-3 and 10 on small byte strings, at every buffer size.

The round-trip properties over generated mboxes (one pass, and segments that tile it) are in test_segments.py."""

from __future__ import annotations

import io

import pytest

from ingester.mbox.mbox import iter_regions
from ingester.mbox.regions import Region
from shared.mbox_format import zone_offset

SEP = b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020\n"
SEP_PLAIN = b"From MAILER-DAEMON Thu Jan  1 00:00:00 2020\n"
CHUNKS = [1, 2, 7, 64, 4096, 8 * 1024 * 1024]


def regions(data: bytes, chunk: int = 8 * 1024 * 1024, start: int = 0) -> list[Region]:
    return list(iter_regions(io.BytesIO(data), start=start, chunk=chunk))


def spans(data: bytes, chunk: int = 8 * 1024 * 1024) -> list[tuple[int, int, bytes, bool]]:
    return [(r.start, r.end, r.header_block, r.postmark is None) for r in regions(data, chunk)]


@pytest.mark.parametrize(
    "line",
    [
        b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020",
        b"From MAILER-DAEMON Thu Jan  1 00:00:00 2020",
        b"From someone@example.com Mon Feb 29 23:59:59 -0700 2016",
        b"From x Sat Mar  7 01:02 2020",
        b"From x Sat Mar 07 01:02:03 2020\r",
        # As mutt, Mail::Box, procmail, pipermail, public-inbox and git write them:
        b"From bob@example.com Wed Feb  9 23:15 MET 2000",
        b"From bob@example.com Wed Feb  9 01:05:34 1998 MEST",
        b"From bob@example.com Wed Feb  9 12:30:05 2001 -0400",
        b"From alice at example.com  Tue Jul 10 11:29:44 2012",
        b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001",
        b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011 remote from example",
        b"From - Sat Jan 03 08:18:12 2009",
    ],
)
def test_separator_lines(line: bytes) -> None:
    data = line + b"\nFrom: a@b.c\n\nbody\n"
    (region,) = regions(data)
    assert (region.start, region.end) == (0, len(data))
    assert region.postmark is not None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"From bob@example.com Wed Feb  9 23:15 MET 2000", 950138100 - 3600),
        (b"From bob@example.com Wed Feb  9 01:05:34 1998 MEST", 886986334 - 7200),
        (b"From bob@example.com Wed Feb  9 01:05:34 PST 1998", 886986334 + 8 * 3600),
        (b"From bob@example.com Wed Feb  9 01:05:34 1998 XYZT", 886986334),  # unknown names read as UTC
        (b"From bob@example.com Wed Feb  9 01:05:34 1998", 886986334),
        (b"From bob@example.com Wed Feb  9 12:30:05 2001 -0400", 981736205),
        (b"From alice at example.com  Tue Jul 10 11:29:44 2012", 1341919784),
    ],
)
def test_separator_dates(line: bytes, expected: int) -> None:
    (region,) = regions(line + b"\nFrom: a@b.c\n\n")
    assert region.postmark is not None
    assert region.postmark.date_unix == expected


@pytest.mark.parametrize(
    ("zone", "seconds_east"),
    [
        (b"+0000", 0),
        (b"-0400", -4 * 3600),
        (b"+0530", 5 * 3600 + 30 * 60),
        (b"-0930", -(9 * 3600 + 30 * 60)),
        (b"UTC", 0),
        (b"GMT", 0),
        (b"gmt", 0),
        (b"EST", -5 * 3600),
        (b"EDT", -4 * 3600),
        (b"CST", -6 * 3600),
        (b"PST", -8 * 3600),
        (b"PDT", -7 * 3600),
        (b"MET", 3600),
        (b"CET", 3600),
        (b"MEST", 2 * 3600),
        (b"CEST", 2 * 3600),
        (b"MESZ", 2 * 3600),
        (b"BST", 3600),
        (b"EEST", 3 * 3600),
        (b"JST", 9 * 3600),
        (b"ACST", 9 * 3600 + 30 * 60),
        (b"NST", -(3 * 3600 + 30 * 60)),
        (b"NZDT", 13 * 3600),
        (b"IST", None),  # ambiguous: India, Ireland, Israel
        (b"XYZT", None),
        (b"+04", None),
        (b"+04x0", None),
    ],
)
def test_zone_offsets(zone: bytes, seconds_east: int | None) -> None:
    assert zone_offset(zone) == seconds_east


def test_real_world_separator_shapes_count_exactly() -> None:
    shapes = [
        b"From bob@example.com Wed Feb  9 23:15 MET 2000",
        b"From bob@example.com Wed Feb  9 01:05:34 1998 MEST",
        b"From bob@example.com Wed Feb  9 12:30:05 2001 -0400",
        b"From alice at example.com  Tue Jul 10 11:29:44 2012",
        b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001",
        SEP.rstrip(b"\n"),
    ]
    data = b"".join(
        shape + b"\nFrom: s%d@x\n\nFrom here on, prose.\n\nFrom the start it was body.\n" % i
        for i, shape in enumerate(shapes * 5)
    )
    got = regions(data, chunk=7)
    assert len(got) == 30
    assert all(r.postmark is not None and not r.suspect for r in got)


@pytest.mark.parametrize(
    "line",
    [
        b"From bob@example.com Wed, 9 Feb 2000 23:15:00 +0100",  # an RFC 5322 date: not a separator shape
        b"From bob Wed Feb 9 2000",
        b"From bob@example.com 2000 Feb 9",
    ],
)
def test_suspect_separator_after_a_blank_line_starts_an_uncounted_region(line: bytes) -> None:
    first = SEP + b"From: a@b.c\n\nbody\n\n"
    suspect = line + b"\nFrom: b@b.c\nSubject: x\n\nits body\n"
    data = first + suspect + SEP_PLAIN + b"From: c@b.c\n\nx\n"
    got = regions(data)
    assert [(r.start, r.suspect, r.postmark is None) for r in got] == [
        (0, False, False),
        (len(first), True, True),
        (len(first) + len(suspect), False, False),
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"From bob Wed, 9 Feb 2000 23:15:00 +0100\nFrom: b@b.c\n",  # no blank line before it
        b"\nFrom Wednesday on, we meet at 10:00\nsee you\n",  # not followed by a header line
        b"\nFrom 2019 to 2020: growth\nResult: good\n",  # no day or month name
    ],
)
def test_prose_from_lines_stay_body(body: bytes) -> None:
    data = SEP + b"From: a@b.c\n\nbody\n" + body
    (region,) = regions(data)
    assert (region.start, region.end, region.suspect) == (0, len(data), False)


def test_separator_storm_is_one_region_per_line() -> None:
    data = SEP_PLAIN * 1000 + b"From: a@b.c\n\nx\n"
    got = regions(data, chunk=4096)
    assert len(got) == 1000
    assert [r.start for r in got] == [i * len(SEP_PLAIN) for i in range(1000)]


@pytest.mark.parametrize(
    "line",
    [
        b">From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020",
        b"From here on, everything is body text",
        b"From x Fri Dec 04 20:33:24 +0000 20201",
        b"From x Fri Dec 04 20:33:24 +0000",
        b"From  Fri Dec 04 20:33:24 2020",
        b"From x Fri Dec 04 2020",
        b" From x Fri Dec 04 20:33:24 2020",
        b"from x Fri Dec 04 20:33:24 2020",
    ],
)
def test_body_lines_that_look_like_separators(line: bytes) -> None:
    data = SEP + b"From: a@b.c\n\nbody\n" + line + b"\nmore\n"
    (region,) = regions(data)
    assert (region.start, region.end) == (0, len(data))


@pytest.mark.parametrize("chunk", CHUNKS)
def test_regions_tile_the_file(chunk: int) -> None:
    first = SEP + b"From: A <a@x.com>\nMessage-ID: <1@x>\n\nbody\nFrom here on, text\n>From x\n"
    second = SEP_PLAIN + b"From: b@y\n"  # no body: the next separator follows a header line directly
    third = SEP_PLAIN.replace(b"\n", b"\r\n") + b"From: c@y\r\n\r\nbody\r\n"
    data = first + second + third
    assert spans(data, chunk) == [
        (0, len(first), b"From: A <a@x.com>\nMessage-ID: <1@x>\n", False),
        (len(first), len(first) + len(second), b"From: b@y\n", False),
        (len(first) + len(second), len(data), b"From: c@y\r\n", False),
    ]


@pytest.mark.parametrize("chunk", [3, 4096, 8 * 1024 * 1024])
def test_long_lines_never_break_framing(chunk: int) -> None:
    long_header = b"X-Long: " + b"h" * 100_000 + b"\n"
    long_body = b"From " + b"b" * 200_000 + b"\n"
    first = SEP + b"From: a@b.c\n" + long_header + b"\n" + long_body + b"tail\n"
    data = first + SEP + b"From: d@e.f\n\nx\n"
    got = regions(data, chunk)
    assert [(r.start, r.end) for r in got] == [(0, len(first)), (len(first), len(data))]
    assert got[0].header_block == b"From: a@b.c\n" + long_header


@pytest.mark.parametrize(
    ("preamble", "skipped"),
    [(b"", False), (b"\n\n  \r\n", False), (b"junk before the first separator\n", True)],
)
def test_preamble(preamble: bytes, skipped: bool) -> None:
    data = preamble + SEP + b"From: a@b.c\n\nbody\n"
    got = regions(data)
    assert [r.postmark is None for r in got] == ([True, False] if skipped else [False])
    assert got[-1].start == len(preamble)


def test_empty_message_between_separators() -> None:
    data = SEP + SEP + b"From: a@b.c\n\nx\n"
    got = regions(data)
    assert [(r.start, r.end, r.header_block) for r in got] == [
        (0, len(SEP), b""),
        (len(SEP), len(data), b"From: a@b.c\n"),
    ]


def test_separator_at_end_of_file_without_newline() -> None:
    first = SEP + b"From: a@b.c\n\nx\n"
    data = first + SEP.rstrip(b"\n")
    assert [(r.start, r.end) for r in regions(data)] == [(0, len(first)), (len(first), len(data))]


def test_postmark_gmail_id_and_date() -> None:
    (region,) = regions(SEP + b"From: a@b.c\n\n")
    assert region.postmark is not None
    assert region.postmark.gmail_id == format(1785392015443392563, "x") == "18c6fc9421527833"
    assert region.postmark.date_unix == 1607114004
    (plain,) = regions(SEP_PLAIN + b"From: a@b.c\n\n")
    assert plain.postmark is not None
    assert plain.postmark.gmail_id is None
    assert plain.postmark.date_unix == 1577836800


def test_resume_from_a_separator_offset() -> None:
    first = SEP + b"From: a@b.c\n\nbody\n"
    data = first + SEP_PLAIN + b"From: d@e.f\n\nx\n"
    assert [(r.start, r.end) for r in regions(data, start=len(first))] == [(len(first), len(data))]
