"""The senders API through the real app on real database files: the page of senders whole, search, sort and
paging (to the edge of the integer range), bad parameters, the summary document and the CSV export.

Status, runs, the import folder and the database's states: test_viewer_status.py.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.support.viewer import SENDERS, make_settings, seed, viewer


def _sender(row: tuple[object, ...]) -> dict[str, object]:
    keys = ("sender", "display_name", "mails_sent", "first_seen_unix", "last_seen_unix", "bytes", "unread")
    return {**dict(zip(keys, row[:7], strict=True)), "list_unsubscribe": row[7]}


DOMAINS = {"news@shop.example": "shop.example", "100%_real@odd.example": "odd.example"}
GMAIL = "https://mail.google.com/mail/u/0/#search/from%3A"


def _row(row: tuple[object, ...]) -> dict[str, object]:
    """The `/api/senders` shape of a `SENDERS` row."""
    sender, mails, unread = str(row[0]), int(row[2]), int(row[6])  # type: ignore[call-overload]
    return {
        **_sender(row),
        "domain": DOMAINS.get(sender, "example.com" if sender.endswith("@example.com") else ""),
        "unread_ratio": round(unread / mails, 4),
        "unsubscribe_url": row[8] if len(row) > 8 else None,
        "one_click": bool(row[9]) if len(row) > 9 else False,
        "gmail_url": GMAIL + sender.replace("%", "%25").replace("@", "%40"),
    }


def test_senders_default_page_whole_body(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(
        make_settings(tmp_path),
    ) as client:
        body = client.get("/api/senders", params={"limit": 3}).json()
    ordered = sorted(SENDERS, key=lambda r: (-r[2], r[0]))
    assert body == {
        "total": 6,
        "total_exact": True,
        "matched_messages": 70,
        "senders": [_row(r) for r in ordered[:3]],
        "total_messages": 70,
        "total_senders": 6,
        "top_sender": _row(ordered[0]),
        "generated_at_unix": body["generated_at_unix"],
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"sort": "sender", "order": "asc"}, ["", "100%_real@odd.example", "12345", "alice@example.com"]),
        (
            {"sort": "sender", "order": "desc", "limit": 3},
            ["news@shop.example", "bob@example.com", "alice@example.com"],
        ),
        ({"sort": "mails_sent", "order": "asc"}, ["", "100%_real@odd.example", "12345", "bob@example.com"]),
        (
            {"sort": "last_seen", "order": "desc", "limit": 3},
            ["news@shop.example", "bob@example.com", "alice@example.com"],
        ),
        ({"sort": "last_seen", "order": "asc", "limit": 2}, ["12345", ""]),
        ({"sort": "bytes", "order": "desc", "limit": 2}, ["news@shop.example", "bob@example.com"]),
        ({"offset": 1, "limit": 2}, ["alice@example.com", "bob@example.com"]),
        ({"offset": 6}, []),
        ({"q": "EXAMPLE.com"}, ["alice@example.com", "bob@example.com"]),
        ({"q": "shop news"}, ["news@shop.example"]),
        ({"q": "%"}, ["100%_real@odd.example"]),
        ({"q": "_"}, ["100%_real@odd.example"]),
        ({"q": "234"}, ["12345"]),
    ],
)
def test_senders_search_sort_and_paging(
    tmp_path: Path, db_path: Path, params: dict[str, str | int], expected: list[str]
) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/senders", params={"limit": 4, **params}).json()
    assert [s["sender"] for s in body["senders"]] == expected
    if "q" in params:
        assert body["total"] == len(expected)
        assert body["total_messages"] == 70  # the whole table, not the search


# Found by the schemathesis fuzzer: `offset` up to 2**63-1 is valid; `offset + limit` must still bind in SQLite.
@pytest.mark.parametrize("path", ["/api/senders", "/api/domains"])
@pytest.mark.parametrize("sort", ["mails_sent", "bytes"])
def test_a_page_past_the_largest_offset_is_empty(tmp_path: Path, db_path: Path, path: str, sort: str) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get(path, params={"offset": 2**63 - 1, "limit": 50, "sort": sort, "order": "asc"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["total"] > 0
        assert body["senders" if path == "/api/senders" else "domains"] == []


@pytest.mark.parametrize(
    "query",
    ["sort=subject", "order=up", "limit=0", "limit=501", "offset=-1", "limit=ten", "q=" + "x" * 201],
)
def test_senders_rejects_bad_parameters(tmp_path: Path, db_path: Path, query: str) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get(f"/api/senders?{query}")
    assert response.status_code == 422
    assert set(response.json()) == {"error", "message"}
    assert response.json()["error"] == "bad_request"


def test_summary_is_the_export_document(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/summary").json()
    ordered = sorted(SENDERS, key=lambda r: (-r[2], r[0]))
    assert body == {
        "total_messages": 70,
        "senders": [_sender(r) for r in ordered],
        "generated_at_unix": body["generated_at_unix"],
    }


def test_export_csv_streams_the_whole_table(tmp_path: Path, db_path: Path) -> None:
    many = [(f"s{i:05d}@bulk.example", f"Bulk {i}", i % 97 + 1, 1, 2, i, 0, 0) for i in range(5000)]
    seed(db_path, senders=many)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get("/api/export.csv")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="gmail-stats-senders.csv"'
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 5000
    assert rows[0] == {
        "sender": "s00096@bulk.example",
        "display_name": "Bulk 96",
        "domain": "bulk.example",
        "mails_sent": "97",
        "unread": "0",
        "unread_ratio": "0.0",
        "bytes": "96",
        "first_seen": "1970-01-01T00:00:01Z",
        "last_seen": "1970-01-01T00:00:02Z",
        "list_unsubscribe": "0",
        "unsubscribe_url": "",
        "one_click": "0",
        "gmail_url": GMAIL + "s00096%40bulk.example",
    }
