"""`gmail-stats export --format gmail-links | gmail-filters` as real processes on a real imported database."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from shared.actions.gmail_filters import FilterActions, read_filters
from shared.actions.gmail_search import URL_LIMIT, search_term, split_terms
from tests.conftest import run_cli
from tests.support.factories import generate_messages, write_mbox


@pytest.fixture
def imported(tmp_path: Path, db_path: Path) -> dict[str, int]:
    mbox = tmp_path / "mail.mbox"
    expected = write_mbox(mbox, generate_messages(count=60, body_bytes=40, senders=12))
    assert run_cli("import", mbox, "--db", db_path).returncode == 0
    return expected


def test_links_for_every_sender_of_the_database(db_path: Path, imported: dict[str, int]) -> None:
    result = run_cli("export", "--format", "gmail-links", "--unread", "--address", "me@gmail.com", "--db", db_path)
    assert result.returncode == 0, result.stderr
    urls = result.stdout.splitlines()
    assert result.stderr == f"gmail-stats: {len(urls)} links for {len(imported)} senders\n"
    terms: list[str] = []
    for url in urls:
        assert len(url) <= URL_LIMIT and url.startswith("https://mail.google.com/mail/?authuser=me@gmail.com#")
        query = unquote(urlsplit(url).fragment.removeprefix("search/")).removesuffix(" is:unread")
        inner = query.removeprefix("from:")
        terms += split_terms(inner[1:-1] if inner.startswith("(") else inner)
    assert sorted(terms) == sorted(search_term(s) for s in imported)


def test_filters_file_from_a_sender_list(tmp_path: Path) -> None:
    picked = tmp_path / "picked.txt"
    senders = [f"promo-{i:03d}@shop-{i:03d}.example" for i in range(300)]
    picked.write_text("# from the viewer\n\n" + "\n".join(senders) + "\n")
    target = tmp_path / "filters.xml"
    args = ("--senders", picked, "--archive", "--label", "Shops", "--output", target, "--db", tmp_path / "none.db")
    result = run_cli("export", "--format", "gmail-filters", *args)
    assert result.returncode == 0, result.stderr
    parsed = read_filters(target.read_text())
    assert result.stderr == f"gmail-stats: {len(parsed)} filters for 300 senders\n"
    assert [t for f in parsed for t in f.terms] == senders
    assert {f.actions for f in parsed} == {FilterActions(archive=True, label="Shops")}


def test_a_csv_export_is_a_sender_list(tmp_path: Path, db_path: Path, imported: dict[str, int]) -> None:
    csv_file = tmp_path / "senders.csv"
    assert run_cli("export", "--format", "csv", "--output", csv_file, "--db", db_path).returncode == 0
    result = run_cli("export", "--format", "gmail-filters", "--senders", csv_file, "--trash", "-q")
    assert result.returncode == 0 and result.stderr == ""
    assert sorted(t for f in read_filters(result.stdout) for t in f.terms) == sorted(imported)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--format", "gmail-filters", "--senders", "LIST"), "choose at least one filter action"),
        (("--format", "gmail-filters", "--senders", "LIST", "--unread"), "--unread applies to --format gmail-links"),
        (("--format", "gmail-links", "--senders", "LIST", "--archive"), "--archive applies to --format gmail-filters"),
        (("--format", "csv", "--mark-read"), "--mark-read applies to --format gmail-links or gmail-filters"),
        (("--format", "gmail-links", "--senders", "LIST", "--address", "me"), "is not a Gmail address"),
        (("--format", "gmail-links", "--senders", "LIST", "--larger-mb", "0"), "--larger-mb must be at least 1"),
        (("--format", "gmail-links", "--senders", "MISSING"), "cannot read the sender list"),
        (("--format", "gmail-links", "--senders", "EMPTY"), "names no sender"),
    ],
)
def test_refusals_are_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "list.txt").write_text("a@x.example\n")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    names = {"LIST": "list.txt", "MISSING": "missing.txt", "EMPTY": "empty.txt"}
    argv = [str(tmp_path / names[a]) if a in names else a for a in args]
    result = run_cli("export", *argv, "--db", tmp_path / "none.db")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert result.stdout == ""
