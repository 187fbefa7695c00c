"""The one "is this an mbox" rule (`shared.mbox_format.sniff_mbox`), shared by the importer and the viewer."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from shared.mbox_format import NotMbox, sniff_mbox
from tests.conftest import run_cli

SEP = b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020\n"


@pytest.mark.parametrize(
    ("data", "problem", "said"),
    [
        (SEP + b"From: a\n", None, ""),
        (b"Some preamble\n" + SEP, None, ""),
        (b"From alice at example.com  Tue Jul 10 11:29:44 2012\n", None, ""),
        (b"x" * (3 * 1024 * 1024) + b"\n" + SEP, None, ""),  # the first separator may lie far in
        (b"", NotMbox.EMPTY, "the file is empty"),
        (b"PK\x03\x04rest of a zip", NotMbox.ARCHIVE, "unzip the Takeout archive first"),
        (b"\x1f\x8b\x08gzip", NotMbox.ARCHIVE, "unzip the Takeout archive first"),
        (b"Subject: not an mbox\n\nhello\n", NotMbox.NO_SEPARATOR, "no line starting with 'From '"),
        (
            b"\n\nFrom bob Wed, 9 Feb 2000 23:15:00 +0100\nFrom: a\n",
            NotMbox.UNKNOWN_SEPARATORS,
            "(the first at byte 2) but none in it is a separator of a known shape",
        ),
        (b"\x00\x01binary", NotMbox.NO_SEPARATOR, "no line starting"),
    ],
)
def test_sniff(data: bytes, problem: NotMbox | None, said: str) -> None:
    result = sniff_mbox(io.BytesIO(data))
    assert result.problem is problem
    assert said in result.reason


@pytest.mark.parametrize("chunk_edge", [1024 * 1024 - 3, 1024 * 1024, 1024 * 1024 + 2])
def test_sniff_finds_a_separator_across_its_read_chunks(chunk_edge: int) -> None:
    data = b"y" * (chunk_edge - 1) + b"\n" + SEP
    assert sniff_mbox(io.BytesIO(data)).problem is None


def test_sniff_reads_at_most_its_limit() -> None:
    data = b"z\n" * 1000 + SEP
    assert sniff_mbox(io.BytesIO(data), limit=1000).problem is NotMbox.NO_SEPARATOR
    assert "in its first 1,000 bytes" in sniff_mbox(io.BytesIO(data), limit=1000).reason


def test_cli_refusal_says_what_it_saw(tmp_path: Path, db_path: Path) -> None:
    archive = tmp_path / "takeout.zip"
    archive.write_bytes(b"PK\x03\x04" + bytes(100))
    result = run_cli("import", archive, "--db", db_path)
    assert result.returncode == 1  # an input-file error, as for any file that is not an mbox
    assert "unzip the Takeout archive first" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not db_path.exists()
