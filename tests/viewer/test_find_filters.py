"""Issue #22 "find what to act on": date, size and month filters and the unread-count sort of `/api/senders` and
the CSV export, through the real app on files written by the ingester's own store."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.viewer import make_settings, seed, viewer

JAN, FEB, MAR = 1_704_067_200, 1_706_745_600, 1_709_251_200  # 2024-01/02/03-01T00:00:00Z
OLD = 1_577_836_800  # 2020-01-01
# sender, name, count, first, last, bytes, unread, list_unsubscribe; the first message is dated `first`, the rest `last`
ROWS: list[tuple[Any, ...]] = [
    ("deals@shop.example", "Deals", 10, JAN, MAR, 10_000_000, 3, 10),  # 1 MB a message
    ("news@shop.example", "News", 4, JAN, FEB, 400, 4, 4),
    ("friend@example.org", "A Friend", 3, FEB, FEB, 3_000_000, 0, 0),  # 1 MB a message
    ("gone@old.example", "Gone", 2, OLD, OLD, 20, 1, 0),
    ("bot@example.org", "", 1, None, None, 50, 1, 0),  # undated: no first or last date, no month
]


@pytest.fixture
def client(tmp_path: Path, db_path: Path) -> Iterator[TestClient]:
    seed(db_path, senders=ROWS)
    with viewer(make_settings(tmp_path)) as c:
        yield c


def _senders(client: TestClient, **params: Any) -> tuple[list[str], int, int]:
    response = client.get("/api/senders", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    return [s["sender"] for s in body["senders"]], body["total"], body["matched_messages"]


@pytest.mark.parametrize(
    ("params", "senders", "matched"),
    [
        # "Silent since": the last mail before the day (undated senders have no last mail and never match).
        ({"last_before": "2024-01-01"}, ["gone@old.example"], 2),
        ({"last_before": "2024-02-02"}, ["news@shop.example", "friend@example.org", "gone@old.example"], 9),
        ({"last_after": "2024-03-01"}, ["deals@shop.example"], 10),  # on or after: the day itself counts
        ({"last_after": "2024-03-02"}, [], 0),
        # "New": the first mail on or after the day.
        ({"first_after": "2024-02-01"}, ["friend@example.org"], 3),
        ({"first_before": "2024-01-01"}, ["gone@old.example"], 2),
        ({"last_after": "2024-02-01", "last_before": "2024-03-01"}, ["news@shop.example", "friend@example.org"], 7),
        # Size: all mail together, or the average message.
        ({"min_bytes": 3_000_000}, ["deals@shop.example", "friend@example.org"], 13),
        ({"min_avg_bytes": 1_000_000}, ["deals@shop.example", "friend@example.org"], 13),
        ({"min_avg_bytes": 1_000_001}, [], 0),
        (
            {"min_avg_bytes": 50},
            ["deals@shop.example", "news@shop.example", "friend@example.org", "bot@example.org"],
            18,
        ),
        # The chart's bar: senders with mail that month.
        ({"month": "2024-02"}, ["news@shop.example", "friend@example.org"], 7),
        ({"month": "2024-03"}, ["deals@shop.example"], 10),
        ({"month": "2019-12"}, [], 0),
        # Terms add up with the older filters and hidden senders.
        ({"month": "2024-01", "exclude": ["deals@shop.example"]}, ["news@shop.example"], 4),
        ({"month": "2024-01", "min_unread_ratio": 0.8}, ["news@shop.example"], 4),
        ({"q": "shop", "min_bytes": 1000}, ["deals@shop.example"], 10),
    ],
)
def test_find_filters(client: TestClient, params: dict[str, Any], senders: list[str], matched: int) -> None:
    assert _senders(client, **params) == (senders, len(senders), matched)


def test_sort_by_unread_count(client: TestClient) -> None:
    # news 4, deals 3, then gone and bot with 1 each (ties in the address order of the other sorts), friend 0.
    down = ["news@shop.example", "deals@shop.example", "gone@old.example", "bot@example.org", "friend@example.org"]
    assert _senders(client, sort="unread")[0] == down
    assert _senders(client, sort="unread", order="asc")[0] == down[::-1]
    assert _senders(client, sort="unread", min_messages=2)[0] == [s for s in down if s != "bot@example.org"]


def test_export_takes_the_same_filters(client: TestClient) -> None:
    response = client.get("/api/export.csv", params={"month": "2024-02", "sort": "unread"})
    assert response.status_code == 200, response.text
    rows = list(csv.reader(io.StringIO(response.text)))
    assert [r[0] for r in rows[1:]] == ["news@shop.example", "friend@example.org"]


@pytest.mark.parametrize(
    "query",
    [
        "last_before=2024-13-01",
        "last_after=yesterday",
        "first_after=2024-02-30",
        "first_before=",
        "min_bytes=-1",
        "min_avg_bytes=1.5",
        "month=2024-00",
        "month=2024-1",
        "month=24-01",
        "sort=unread_count",
    ],
)
def test_bad_find_filters_are_422(client: TestClient, query: str) -> None:
    response = client.get(f"/api/senders?{query}")
    assert response.status_code == 422
    assert set(response.json()) == {"error", "message"}
    assert response.json()["error"] == "bad_request"


def test_domains_export_lists_what_the_domains_view_lists(client: TestClient) -> None:
    response = client.get("/api/domains.csv", params={"exclude": "news@shop.example", "sort": "senders"})
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"] == 'attachment; filename="gmail-stats-domains.csv"'
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == [
        "domain",
        "senders",
        "mails_sent",
        "unread",
        "unread_ratio",
        "bytes",
        "first_seen",
        "last_seen",
        "list_unsubscribe",
        "gmail_url",
    ]
    body = rows[1:]
    page = client.get("/api/domains", params={"exclude": "news@shop.example", "sort": "senders"}).json()["domains"]
    assert (
        [r[0] for r in body] == [d["domain"] for d in page] == ["example.org", "shop.example", "old.example"]
    )  # ties: Z to A
    shop = body[1]
    # The hidden sender leaves its domain's sums, as on the page.
    assert shop[:6] == ["shop.example", "1", "10", "3", "0.3", "10000000"]
    assert shop[6:8] == ["2024-01-01T00:00:00Z", "2024-03-01T00:00:00Z"]
    assert client.get("/api/domains.csv", params={"q": "old"}).text.splitlines()[1].startswith("old.example,1,2,")
    assert client.get("/api/domains.csv", params={"sort": "unread"}).status_code == 422
