"""`gmail-stats export`'s date and size filters (#22), as real processes on a real file written by the ingester's
own store: they keep the senders the viewer's same filters keep, in every format but a `--senders` list."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from shared.actions.gmail_filters import read_filters
from tests.conftest import run_cli
from tests.support.viewer import make_settings, seed, viewer
from tests.viewer.test_find_filters import ROWS


@pytest.fixture
def seeded(db_path: Path) -> Path:
    seed(db_path, senders=ROWS)
    return db_path


@pytest.mark.parametrize(
    ("flags", "params"),
    [
        (("--last-before", "2024-02-02"), {"last_before": "2024-02-02"}),
        (("--last-after", "2024-03-01"), {"last_after": "2024-03-01"}),
        (
            ("--first-after", "2024-02-01", "--first-before", "2024-03-01"),
            {"first_after": "2024-02-01", "first_before": "2024-03-01"},
        ),
        (("--min-bytes", "3000000"), {"min_bytes": 3_000_000}),
        (("--min-avg-bytes", "1000000"), {"min_avg_bytes": 1_000_000}),
    ],
)
def test_export_keeps_what_the_viewer_keeps(
    tmp_path: Path, seeded: Path, flags: tuple[str, ...], params: dict[str, str | int]
) -> None:
    with viewer(make_settings(tmp_path)) as client:
        shown = [s["sender"] for s in client.get("/api/senders", params=params).json()["senders"]]
    assert shown  # every case keeps someone, and leaves someone out
    assert len(shown) < len(ROWS)
    as_csv = run_cli("export", "--format", "csv", *flags, "--db", seeded)
    assert as_csv.returncode == 0, as_csv.stderr
    assert [r["sender"] for r in csv.DictReader(io.StringIO(as_csv.stdout))] == shown
    as_json = run_cli("export", *flags, "--db", seeded)
    document = json.loads(as_json.stdout)
    assert [s["sender"] for s in document["senders"]] == shown
    assert document["total_messages"] == sum(s["mails_sent"] for s in document["senders"])
    filters = run_cli("export", "--format", "gmail-filters", "--archive", *flags, "-q", "--db", seeded)
    assert sorted(t for f in read_filters(filters.stdout) for t in f.terms) == sorted(shown)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--last-before", "2024-13-01"), "is not a day such as 2024-01-31"),
        (("--min-bytes", "-5"), "is not a whole number of bytes"),
        (("--format", "gmail-links", "--senders", "LIST", "--last-after", "2024-01-01"), "choose from the database"),
    ],
)
def test_bad_choices_are_refused(tmp_path: Path, seeded: Path, flags: tuple[str, ...], message: str) -> None:
    (tmp_path / "list.txt").write_text("a@x.example\n")
    args = [str(tmp_path / "list.txt") if a == "LIST" else a for a in flags]
    result = run_cli("export", *args, "--db", seeded)
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""
