"""`/api/senders` filters, `/api/domains`, `/api/volume` and the filtered CSV, through the real app on files
written by the ingesters' own store (so rollups and the search index are the real ones)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from tests.support.viewer import make_settings, seed, viewer

JAN, FEB, MAR = 1_704_067_200, 1_706_745_600, 1_709_251_200  # 2024-01/02/03-01T00:00:00Z
GMAIL = "https://mail.google.com/mail/u/0/#search/from%3A"
# sender, name, count, first, last, bytes, unread, list_unsubscribe[, target, one-click]
ROWS: list[tuple[Any, ...]] = [
    ("deals@mail.shop.co.uk", "Shop Deals", 10, JAN, MAR, 1000, 9, 10, "https://shop.co.uk/u", True),
    ("news@shop.co.uk", "Shop News", 4, JAN, FEB, 400, 4, 4, "mailto:u@shop.co.uk"),
    ("friend@example.org", "A Friend", 3, FEB, FEB, 30, 0, 0),
    ("bot@example.org", "", 2, None, None, 2, 2, 0),
]


def _get(tmp_path: Path, path: str, **params: Any) -> Any:
    with viewer(make_settings(tmp_path)) as client:
        response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def seeded(tmp_path: Path, db_path: Path) -> Path:
    seed(db_path, senders=ROWS)
    return tmp_path


def test_rows_carry_domain_unsubscribe_and_gmail_link(seeded: Path) -> None:
    body = _get(seeded, "/api/senders", limit=1)
    top = {
        "sender": "deals@mail.shop.co.uk",
        "display_name": "Shop Deals",
        "mails_sent": 10,
        "first_seen_unix": JAN,
        "last_seen_unix": MAR,
        "bytes": 1000,
        "unread": 9,
        "list_unsubscribe": 10,
        "domain": "shop.co.uk",
        "unread_ratio": 0.9,
        "unsubscribe_url": "https://shop.co.uk/u",
        "one_click": True,
        "gmail_url": GMAIL + "deals%40mail.shop.co.uk",
    }
    assert body == {
        "total": 4,
        "total_exact": True,
        "matched_messages": 19,
        "senders": [top],
        "total_messages": 19,
        "total_senders": 4,
        "top_sender": top,
        "generated_at_unix": body["generated_at_unix"],
    }


@pytest.mark.parametrize(
    ("params", "senders", "matched"),
    [
        # Ties run the same way as the value (so the index walk is the whole order).
        ({"sort": "unread_ratio"}, ["news@shop.co.uk", "bot@example.org", "deals@mail.shop.co.uk"], 16),
        ({"sort": "unread_ratio", "order": "asc"}, ["friend@example.org", "deals@mail.shop.co.uk"], 13),
        ({"sort": "name", "order": "asc"}, ["friend@example.org", "bot@example.org", "deals@mail.shop.co.uk"], 15),
        ({"sort": "first_seen", "order": "asc"}, ["bot@example.org", "deals@mail.shop.co.uk"], 12),
        ({"domain": "shop.co.uk"}, ["deals@mail.shop.co.uk", "news@shop.co.uk"], 14),
        ({"min_messages": 4}, ["deals@mail.shop.co.uk", "news@shop.co.uk"], 14),
        ({"min_unread_ratio": 0.95}, ["news@shop.co.uk", "bot@example.org"], 6),
        ({"has_unsubscribe": "true"}, ["deals@mail.shop.co.uk", "news@shop.co.uk"], 14),
        ({"has_unsubscribe": "false"}, ["friend@example.org", "bot@example.org"], 5),
        ({"q": "shop", "exclude": ["deals@mail.shop.co.uk"]}, ["news@shop.co.uk"], 4),
        ({"q": "zzzz-nothing"}, [], 0),
        ({"q": "ie"}, ["friend@example.org"], 3),
        ({"q": "fri\x00end"}, ["friend@example.org"], 3),  # a NUL is dropped (FTS5 refuses it in a phrase)
        (
            {"q": '"shop" OR *'},
            [],
            0,
        ),  # FTS5 syntax is searched for as text  # under three characters: no trigram, still a substring
        # The "likely unsubscribe" preset: many messages, mostly unread, has a link.
        (
            {"min_messages": 3, "min_unread_ratio": 0.8, "has_unsubscribe": "true"},
            ["deals@mail.shop.co.uk", "news@shop.co.uk"],
            14,
        ),
    ],
)
def test_filters_and_sorts(seeded: Path, params: dict[str, Any], senders: list[str], matched: int) -> None:
    limit = len(senders) if senders and "sort" in params else 10
    body = _get(seeded, "/api/senders", limit=limit, **params)
    assert [s["sender"] for s in body["senders"]] == senders
    if "sort" not in params:
        assert body["total"] == len(senders)
    assert body["matched_messages"] == matched or "sort" in params


def test_hidden_senders_leave_totals_and_top_sender(seeded: Path) -> None:
    body = _get(seeded, "/api/senders", exclude=["deals@mail.shop.co.uk", "nobody@x.y"], limit=1)
    assert (body["total"], body["total_messages"], body["total_senders"]) == (3, 9, 3)
    assert body["top_sender"]["sender"] == "news@shop.co.uk"
    assert [s["sender"] for s in body["senders"]] == ["news@shop.co.uk"]


def _domain(
    name: str, senders: int, mails: int, size: int, unread: int, unsub: int, first: Any, last: Any
) -> dict[str, Any]:
    return {
        "domain": name,
        "senders": senders,
        "mails_sent": mails,
        "bytes": size,
        "unread": unread,
        "unread_ratio": round(unread / mails, 4),
        "list_unsubscribe": unsub,
        "first_seen_unix": first,
        "last_seen_unix": last,
        "gmail_url": GMAIL + name,
    }


def test_domains_roll_up_and_add_up(seeded: Path) -> None:
    body = _get(seeded, "/api/domains")
    assert body == {
        "total": 2,
        "total_messages": 19,
        "domains": [
            _domain("shop.co.uk", 2, 14, 1400, 13, 14, JAN, MAR),
            _domain("example.org", 2, 5, 32, 2, 0, FEB, FEB),
        ],
        "generated_at_unix": body["generated_at_unix"],
    }
    assert sum(d["mails_sent"] for d in body["domains"]) == body["total_messages"]


def test_domains_with_hidden_senders_are_recomputed_and_resorted(seeded: Path) -> None:
    body = _get(seeded, "/api/domains", exclude=["deals@mail.shop.co.uk"], sort="mails_sent")
    assert body["domains"] == [
        _domain("example.org", 2, 5, 32, 2, 0, FEB, FEB),
        _domain("shop.co.uk", 1, 4, 400, 4, 4, JAN, FEB),
    ]
    assert body["total_messages"] == 9 == sum(d["mails_sent"] for d in body["domains"])
    gone = _get(seeded, "/api/domains", exclude=["friend@example.org", "bot@example.org"])
    assert [d["domain"] for d in gone["domains"]] == ["shop.co.uk"] and gone["total"] == 1
    assert _get(seeded, "/api/domains", q="example")["total"] == 1
    by_name = _get(seeded, "/api/domains", sort="domain", order="asc")
    assert [d["domain"] for d in by_name["domains"]] == ["example.org", "shop.co.uk"]


def test_volume_adds_up_for_every_scope(seeded: Path) -> None:
    # Every message of a row is dated `first` except the rest, dated `last` (see `records_for`).
    assert _get(seeded, "/api/volume") == {
        "months": [
            {"month": "2024-01", "messages": 2, "bytes": 1000 // 10 + 1000 % 10 + 400 // 4},
            {"month": "2024-02", "messages": 6, "bytes": 300 + 30},
            {"month": "2024-03", "messages": 9, "bytes": 900},
        ],
        "undated": 2,
    }
    assert _get(seeded, "/api/volume", sender="friend@example.org") == {
        "months": [{"month": "2024-02", "messages": 3, "bytes": 30}],
        "undated": 0,
    }
    assert _get(seeded, "/api/volume", domain="example.org") == {
        "months": [{"month": "2024-02", "messages": 3, "bytes": 30}],
        "undated": 2,
    }
    hidden = _get(seeded, "/api/volume", exclude=["deals@mail.shop.co.uk"])
    assert hidden == {
        "months": [
            {"month": "2024-01", "messages": 1, "bytes": 100},
            {"month": "2024-02", "messages": 6, "bytes": 330},
        ],
        "undated": 2,
    }
    # A gap between months with mail is a zero, so a chart's x axis is continuous.
    assert [m["month"] for m in _get(seeded, "/api/volume", sender="deals@mail.shop.co.uk")["months"]] == [
        "2024-01",
        "2024-02",
        "2024-03",
    ]


def test_volume_of_an_unknown_scope_is_404(seeded: Path) -> None:
    with viewer(make_settings(seeded)) as client:
        missing = client.get("/api/volume", params={"sender": "nobody@nowhere"})
        both = client.get("/api/volume", params={"sender": "a@b.c", "domain": "b.c"})
    assert (missing.status_code, missing.json()) == (
        404,
        {"error": "not_found", "message": "no such sender or domain in this database"},
    )
    assert (both.status_code, both.json()["error"]) == (422, "bad_scope")


def test_export_honours_filters_sort_and_writes_iso_dates(seeded: Path) -> None:
    with viewer(make_settings(seeded)) as client:
        response = client.get(
            "/api/export.csv", params={"domain": "shop.co.uk", "exclude": "news@shop.co.uk", "sort": "name"}
        )
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert rows == [
        {
            "sender": "deals@mail.shop.co.uk",
            "display_name": "Shop Deals",
            "domain": "shop.co.uk",
            "mails_sent": "10",
            "unread": "9",
            "unread_ratio": "0.9",
            "bytes": "1000",
            "first_seen": "2024-01-01T00:00:00Z",
            "last_seen": "2024-03-01T00:00:00Z",
            "list_unsubscribe": "10",
            "unsubscribe_url": "https://shop.co.uk/u",
            "one_click": "1",
            "gmail_url": GMAIL + "deals%40mail.shop.co.uk",
        }
    ]


@pytest.mark.parametrize(
    "query",
    ["min_unread_ratio=2", "min_messages=-1", "sort=unread_count", "has_unsubscribe=maybe", "exclude=" + "x" * 321],
)
def test_bad_filters_are_422(seeded: Path, query: str) -> None:
    with viewer(make_settings(seeded)) as client:
        response = client.get(f"/api/senders?{query}")
    assert (response.status_code, response.json()["error"]) == (422, "bad_request")
