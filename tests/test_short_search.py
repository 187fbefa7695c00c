"""Searches of one or two characters (below the trigram index): exact totals and pages on both of their paths.

10,600 senders written by the ingester's own store: a rare or absent pair of characters is collected in one scan
(`short_search.SPARSE_LIMIT` or fewer matches), a common one is counted and paged by walking a sort index. Every
answer is checked against a brute-force filter of the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.viewer_support import make_settings, seed, viewer
from viewer.short_search import SPARSE_LIMIT

DAY = 1_700_000_000


def _rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i in range(10_600):
        name = "" if i % 50 == 0 else f"Name {i} {'XQ' if i % 97 == 0 else 'ab'}"
        count = 1 + (i * 7919) % 6
        rows.append((f"u{i}@d{i % 37}.example", name, count, DAY + i, DAY + i, 10 * count, 0, 0))
    rows.append(("100%_odd@x.example", "Per_cent", 2, DAY, DAY, 20, 0, 0))
    return rows


ROWS = _rows()


def _matches(q: str) -> list[tuple[Any, ...]]:
    """SQLite's LIKE: substring of address or name, case folded for ASCII only."""
    needle = q.lower()
    return [r for r in ROWS if needle in r[0].lower() or needle in r[1].lower()]


def _ordered(rows: list[tuple[Any, ...]], sort: str, order: str) -> list[str]:
    if sort == "mails_sent":  # ties A→Z when descending (the index is `mails_sent DESC, sender`)
        keyed = sorted(rows, key=lambda r: r[0])
        keyed.sort(key=lambda r: r[2], reverse=order == "desc")
        return [r[0] for r in keyed]
    ranked = sorted(rows, key=lambda r: ((r[1] or r[0]).lower(), r[0]), reverse=order == "desc")
    return [r[0] for r in ranked]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("short")
    seed(tmp_path / "stats.db", senders=ROWS)
    return tmp_path


@pytest.mark.parametrize(
    ("q", "path"),
    [
        ("q", "sparse"),  # 'XQ' in a few names only
        ("xq", "sparse"),
        ("zz", "sparse"),  # nothing
        ("7", "sparse"),
        ("%", "sparse"),
        ("_", "sparse"),
        ("u1", "sparse"),
        ("e", "dense"),  # every address
        ("AB", "dense"),
        ("1", "sparse"),
        ("me", "dense"),
    ],
)
@pytest.mark.parametrize(("sort", "order"), [("mails_sent", "desc"), ("name", "asc")])
def test_short_searches_count_and_page_exactly(site: Path, q: str, path: str, sort: str, order: str) -> None:
    matched = _matches(q)
    assert (len(matched) > SPARSE_LIMIT) == (path == "dense")
    expected = _ordered(matched, sort, order)
    with viewer(make_settings(site)) as client:
        for offset in (0, 50, max(0, len(expected) - 10)):
            params: dict[str, str | int] = {"q": q, "sort": sort, "order": order, "offset": offset, "limit": 50}
            body = client.get("/api/senders", params=params).json()
            assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched))
            assert [s["sender"] for s in body["senders"]] == expected[offset : offset + 50]


def test_a_short_search_combines_with_the_other_filters(site: Path) -> None:
    hidden = ["u10@d10.example", "u1@d1.example"]
    matched = [r for r in _matches("u1") if r[2] >= 3 and r[0] not in hidden]
    with viewer(make_settings(site)) as client:
        body = client.get("/api/senders", params={"q": "u1", "min_messages": 3, "exclude": hidden, "limit": 500}).json()
    assert (body["total"], body["matched_messages"]) == (len(matched), sum(r[2] for r in matched))
    assert [s["sender"] for s in body["senders"]] == _ordered(matched, "mails_sent", "desc")[:500]
