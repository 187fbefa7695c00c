"""Narrowing filters (searches of any length, presets, domains): exact totals and pages on every path.

72,003 senders written by the ingester's own store. A filter's matches are counted once per database change
(`viewer.query.filter_match`): when there are `SPARSE_LIMIT` or fewer, a page is sorted from their ids; when more, a
page walks a sort index testing each row (`LIKE` for a search, also for a common search of three characters or more,
which the trigram index would otherwise list in full). A search alone is counted from `senders.search_key`'s covering
index, in an order a sample of the oldest senders picks. Every answer is checked against a brute-force filter of the
same rows: an ASCII search means what `LIKE` means (case folded for ASCII only) at any length, another search the
trigram index's Unicode case folding.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.models import Source
from tests.support.viewer import make_settings, records_for, seed, viewer
from viewer.query.filter_match import SAMPLE, SPARSE_LIMIT

DAY = 1_700_000_000
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i in range(72_000):
        name = "" if i % 50 == 0 else f"Name {i} {'XQ' if i % 97 == 0 else 'abs'}"
        count = 1 + (i * 7919) % 6
        unread = (i * 31) % (count + 1)
        target = (f"https://unsubscribe.example/{i}",) if i % 3 == 0 else ()
        rows.append((f"u{i}@d{i % 37}.example", name, count, DAY + i, DAY + i, 10 * count, unread, 0, *target))
    rows.append(("100%_odd@x.example", "Per_cent", 2, DAY, DAY, 20, 0, 0))
    rows.append(("kelvin@x.example", "\u212aelvin aB\u017f", 4, DAY, DAY, 40, 4, 0))  # the index reads "kelvin abs"
    rows.append(("elodie@x.example", "Élodie Ünal", 3, DAY, DAY, 30, 1, 0))
    return rows


ROWS = _rows()


def _searched(q: str) -> list[tuple[Any, ...]]:
    """`LIKE` (case folded for ASCII only) for an ASCII search; the trigram index's Unicode folding for another."""
    if q.isascii():
        needle = q.translate(ASCII_LOWER)
        return [r for r in ROWS if needle in r[0].translate(ASCII_LOWER) or needle in r[1].translate(ASCII_LOWER)]
    needle = q.lower()
    return [r for r in ROWS if needle in r[0].lower() or needle in r[1].lower()]


def _filtered(rows: list[tuple[Any, ...]], params: dict[str, Any]) -> list[tuple[Any, ...]]:
    least = params.get("min_messages", 0)
    ratio = params.get("min_unread_ratio", 0.0)
    unsubscribe = params.get("has_unsubscribe")
    domain = params.get("domain")
    return [
        r
        for r in rows
        if (domain is None or r[0].partition("@")[2] == domain)
        and r[2] >= least
        and r[6] / max(r[2], 1) >= ratio
        and (unsubscribe is None or (len(r) > 8) == (unsubscribe == "true"))
    ]


def _ordered(rows: list[tuple[Any, ...]], sort: str, order: str) -> list[str]:
    if sort == "mails_sent":  # ties A→Z when descending (the index is `mails_sent DESC, sender`)
        keyed = sorted(rows, key=lambda r: r[0])
        keyed.sort(key=lambda r: r[2], reverse=order == "desc")
        return [r[0] for r in keyed]
    if sort == "unread_ratio":  # the index is `(ratio, sender)`: ties run the way the ratio does
        ratio = sorted(rows, key=lambda r: (r[6] / max(r[2], 1), r[0]), reverse=order == "desc")
        return [r[0] for r in ratio]
    # SQLite's lower() folds ASCII only; text compares by code point (UTF-8 byte order)
    ranked = sorted(rows, key=lambda r: ((r[1] or r[0]).translate(ASCII_LOWER), r[0]), reverse=order == "desc")
    return [r[0] for r in ranked]


@dataclass(frozen=True)
class Site:
    """One viewer shared by the module's read-only tests."""

    path: Path
    client: TestClient

    def viewer(self) -> AbstractContextManager[TestClient]:
        return nullcontext(self.client)


def open_viewer(path: Path) -> AbstractContextManager[TestClient]:
    return viewer(make_settings(path))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("short")
    seed(tmp_path / "stats.db", senders=ROWS)
    return tmp_path


@pytest.fixture(scope="module")
def site(seeded: Path) -> Iterator[Site]:
    with open_viewer(seeded) as client:
        yield Site(seeded, client)


CASES: list[tuple[dict[str, Any], str]] = [
    ({"q": "q"}, "sparse"),  # 'XQ' in a few names only
    ({"q": "xq"}, "sparse"),
    ({"q": "zz"}, "sparse"),  # nothing
    ({"q": "7"}, "sparse"),
    ({"q": "%"}, "sparse"),
    ({"q": "_"}, "sparse"),
    ({"q": "u1"}, "sparse"),
    ({"q": "e"}, "dense"),  # every address
    ({"q": "AB"}, "dense"),
    ({"q": "me"}, "dense"),
    # From three characters the trigram index answers; a common search is tested row by row instead.
    ({"q": "abs"}, "dense"),  # not the row whose name holds a LONG S, which the index alone would fold to "s"
    ({"q": "ABS"}, "dense"),
    ({"q": "xample"}, "dense"),
    ({"q": "me 1"}, "sparse"),  # the index lists ~11,000: below the limit, looked up by id
    ({"q": "me 17"}, "sparse"),
    ({"q": "kelvin"}, "sparse"),
    ({"q": "élo"}, "sparse"),  # folded beyond ASCII: matches "Élodie"
    ({"q": "ÜNAL"}, "sparse"),
    ({"q": "zzz"}, "sparse"),
    # A common search narrowed by a preset: below the limit, or not.
    ({"q": "abs", "min_messages": 6}, "sparse"),
    ({"q": "e", "has_unsubscribe": "true"}, "sparse"),
    ({"q": "abs", "min_messages": 2}, "dense"),
    ({"q": "e", "has_unsubscribe": "false"}, "dense"),
    # Presets without a search, few and many.
    ({"min_messages": 4, "min_unread_ratio": 0.5, "has_unsubscribe": "true"}, "sparse"),
    ({"min_messages": 6}, "sparse"),
    ({"min_unread_ratio": 0.5}, "dense"),
    ({"min_messages": 2}, "dense"),
    ({"has_unsubscribe": "false", "min_unread_ratio": 0.2}, "dense"),
    ({"domain": "d3.example"}, "sparse"),
]


def _expected(filters: dict[str, Any]) -> list[tuple[Any, ...]]:
    return _filtered(_searched(filters["q"]) if "q" in filters else ROWS, filters)


@pytest.mark.parametrize(("filters", "path"), CASES, ids=[str(c[0]) for c in CASES])
@pytest.mark.parametrize(("sort", "order"), [("mails_sent", "desc"), ("name", "asc"), ("unread_ratio", "asc")])
def test_filters_count_and_page_exactly(site: Site, filters: dict[str, Any], path: str, sort: str, order: str) -> None:
    matched = _expected(filters)
    assert (len(matched) > SPARSE_LIMIT) == (path == "dense")
    expected = _ordered(matched, sort, order)
    with site.viewer() as client:
        for offset in (0, 50, len(expected) // 2, max(0, len(expected) - 10)):
            params = {**filters, "sort": sort, "order": order, "offset": offset, "limit": 50}
            # Past the limit the count stops there ("30,000+") unless asked to go on; the rows are the same.
            limited = client.get("/api/senders", params=params).json()
            counted = (
                (SPARSE_LIMIT, False, None) if path == "dense" else (len(matched), True, sum(r[2] for r in matched))
            )
            assert (limited["total"], limited["total_exact"], limited["matched_messages"]) == counted
            body = client.get("/api/senders", params={**params, "exact_count": "true"}).json()
            assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched))
            assert body["total_exact"] is True
            assert [s["sender"] for s in body["senders"]] == expected[offset : offset + 50]
            assert [s["sender"] for s in limited["senders"]] == expected[offset : offset + 50]


def test_a_search_combines_with_the_other_filters(site: Site) -> None:
    hidden = ["u10@d10.example", "u1@d1.example"]
    for q in ("u1", "abs"):
        matched = [r for r in _searched(q) if r[2] >= 3 and r[0] not in hidden]
        with site.viewer() as client:
            params = {"q": q, "min_messages": 3, "exclude": hidden, "limit": 500, "exact_count": "true"}
            body = client.get("/api/senders", params=params).json()
        assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched))
        assert [s["sender"] for s in body["senders"]] == _ordered(matched, "mails_sent", "desc")[:500]


@pytest.mark.parametrize("q", ["u1", "e", "xq", "abs", "me 1"])
def test_hidden_senders_leave_a_search_tested_on_every_sender(site: Site, q: str) -> None:
    """Such a search is counted over the search key's index without a look at hidden senders; those matching are
    then taken away from the count, the mail and the kept ids (one hidden sender does not exist)."""
    hidden = ["u10@d10.example", "u1@d1.example", "u97@d23.example", "gone@nowhere.example"]
    matched = [r for r in _searched(q) if r[0] not in hidden]
    expected = _ordered(matched, "name", "asc")
    with site.viewer() as client:
        for offset in (0, len(expected) // 2):
            params: dict[str, Any] = {"q": q, "exclude": hidden, "sort": "name", "order": "asc", "offset": offset}
            body = client.get("/api/senders", params=params).json()
            assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched))
            assert [s["sender"] for s in body["senders"]] == expected[offset : offset + 50]


def test_a_search_never_matches_across_the_address_and_the_name(site: Site) -> None:
    """The search key joins them with a newline; a search holding one tests each on its own."""
    with site.viewer() as client:
        for q in ("example\nName", "e\nN"):
            body = client.get("/api/senders", params={"q": q}).json()
            assert (body["total"], body["senders"]) == (0, []), q


def test_a_wrong_guess_from_the_sample_costs_a_pass_never_a_count(tmp_path: Path) -> None:
    """A short search is first tried on the oldest SAMPLE senders. Here they mislead both ways: `q` is in all of
    them and nowhere else (guessed many, found few: the ids are then collected), `w` in none of them and in
    30,002 later ones (guessed few: the count goes on from the last key of the first SPARSE_LIMIT + 1). Two of
    the `w` senders share one search key (an address holding a newline) right at that cut."""
    oldest = [(f"q{i}@x.test", "", 1 + i % 3, DAY, DAY, 10, 0, 0) for i in range(SAMPLE)]
    later = [(f"w{i}@x.test", "", 2, DAY, DAY, 20, 0, 0) for i in range(SPARSE_LIMIT)]
    tied = [("wtie\nz", "", 5, DAY, DAY, 50, 0, 0), ("wtie", "z\n", 7, DAY, DAY, 70, 0, 0)]  # both "wtie\nz\n"
    rows = oldest + later + tied
    seed(tmp_path / "stats.db", senders=rows)
    with open_viewer(tmp_path) as client:
        for q, matched in (("q", oldest), ("w", later + tied), ("Q1", [r for r in oldest if "q1" in r[0]])):
            expected = _ordered(matched, "mails_sent", "desc")
            for offset in (0, len(expected) - 10):
                params: dict[str, Any] = {"q": q, "offset": offset, "exact_count": "true"}
                body = client.get("/api/senders", params=params).json()
                assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched)), q
                assert [s["sender"] for s in body["senders"]] == expected[offset : offset + 50]


def test_a_counted_filter_follows_the_database_as_it_changes(tmp_path: Path) -> None:
    """The count is kept for one generation; a commit by the ingester raises it, so the next answer counts anew."""
    seed(tmp_path / "stats.db", senders=ROWS[:300])
    settings = make_settings(tmp_path)
    added = [(f"new{i}@abs.example", "", 2, DAY, DAY, 20, 0, 0) for i in range(5)]
    old = [r for r in ROWS[:300] if "abs" in r[1].lower()]
    with open_viewer(tmp_path) as client:
        before = client.get("/api/senders", params={"q": "abs"}).json()
        engine = writer_engine(settings.db)
        with engine.begin() as conn:
            count_batch(conn, list(records_for(added)), source=Source.MBOX, run_id=1)
        close_writer_keeping_sidecars(engine, settings.db)
        after = client.get("/api/senders", params={"q": "abs", "min_messages": 2}).json()
        settled = client.get("/api/senders", params={"q": "abs", "sort": "sender", "order": "asc"}).json()
    assert (before["total"], after["total"]) == (len(old), len([r for r in old if r[2] >= 2]) + 5)
    assert (settled["total"], settled["matched_messages"]) == (len(old) + 5, before["matched_messages"] + 10)
    assert [s["sender"] for s in settled["senders"]][:5] == [f"new{i}@abs.example" for i in range(5)]
