"""Any number of hidden senders: registered once (`POST /api/hidden`), named by id (`hidden=`), and left out of
totals, paging, the domain view, volume and the export alike. Real files written by the ingester's own store."""

from __future__ import annotations

import csv
import io
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.viewer import csrf_headers, make_settings, seed, viewer
from viewer.query.hidden import MAX_SETS
from viewer.web.security import BODY_CAPS

MONTH = 1_700_000_000


def _rows() -> list[tuple[Any, ...]]:
    """1,500 senders over 40 domains, one to seven messages each, dated over a few months."""
    rows: list[tuple[Any, ...]] = []
    for i in range(1500):
        count = 1 + i % 7
        first = MONTH + (i % 5) * 2_700_000
        rows.append((f"user{i}@d{i % 40}.example", f"User {i}", count, first, first, 100 * count, i % 2, 0))
    return rows


ROWS = _rows()
HIDDEN = [r[0] for i, r in enumerate(ROWS) if i % 3 != 2]  # 1,000 senders, some of every domain
WHOLE_DOMAINS = [r[0] for r in ROWS if r[0].endswith("@d3.example")]  # every sender of one domain


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("hidden")
    seed(tmp_path / "stats.db", senders=ROWS)
    return tmp_path


def _register(client: Any, senders: list[str]) -> str:
    response = client.post("/api/hidden", json={"senders": senders}, headers=csrf_headers(client))
    assert response.status_code == 200, response.text
    assert response.json()["count"] == len({s.strip() for s in senders})
    return str(response.json()["hidden"])


def _viewer(site: Path) -> AbstractContextManager[TestClient]:
    return viewer(make_settings(site))


def test_a_thousand_hidden_senders_leave_totals_paging_domains_volume_and_export(site: Path) -> None:
    hidden = {*HIDDEN, *WHOLE_DOMAINS}
    assert len(hidden) > 1000
    left = [r for r in ROWS if r[0] not in hidden]
    messages = sum(r[2] for r in left)
    with _viewer(site) as client:
        key = _register(client, sorted(hidden))
        seen: list[str] = []
        for offset in range(0, len(left), 200):
            body = client.get("/api/senders", params={"hidden": key, "limit": 200, "offset": offset}).json()
            assert (body["total"], body["total_senders"]) == (len(left), len(left))
            assert (body["matched_messages"], body["total_messages"]) == (messages, messages)
            assert body["top_sender"]["sender"] not in hidden
            seen += [s["sender"] for s in body["senders"]]
        assert sorted(seen) == sorted(r[0] for r in left)

        domains = client.get("/api/domains", params={"hidden": key, "limit": 500}).json()
        assert domains["total"] == len({r[0].split("@")[1] for r in left})  # d3.example has no sender left
        assert "d3.example" not in {d["domain"] for d in domains["domains"]}
        assert sum(d["mails_sent"] for d in domains["domains"]) == domains["total_messages"] == messages
        assert sum(d["senders"] for d in domains["domains"]) == len(left)

        volume = client.get("/api/volume", params={"hidden": key}).json()
        assert sum(m["messages"] for m in volume["months"]) + volume["undated"] == messages

        exported = client.get("/api/export.csv", params={"hidden": key, "q": "user1"})
        rows = list(csv.DictReader(io.StringIO(exported.text)))
        assert sorted(r["sender"] for r in rows) == sorted(r[0] for r in left if "user1" in r[0])


def test_hidden_and_exclude_add_up(site: Path) -> None:
    extra = "user2@d2.example"  # not in HIDDEN
    with viewer(make_settings(site)) as client:
        key = _register(client, HIDDEN)
        body = client.get("/api/senders", params={"hidden": key, "exclude": extra, "limit": 1}).json()
    assert body["total"] == len(ROWS) - len(HIDDEN) - 1


def test_one_set_has_one_id_whatever_its_order(site: Path) -> None:
    with viewer(make_settings(site)) as client:
        first = _register(client, ["b@x.example", "a@x.example"])
        assert _register(client, [" a@x.example", "b@x.example ", "a@x.example"]) == first
        # A sender is named exactly: one without an address keeps its case, so case makes another set.
        assert _register(client, ["B@x.example", "a@x.example"]) != first


# What a stranger's From header can leave as a sender: no address (the text keeps its case), no From at all,
# a NUL; and a plain sender beside them.
ODD_SENDERS = ["Mailer Daemon", "", "Mail\x00er", "plain@x.example"]


def test_senders_without_an_address_or_with_a_nul_can_be_hidden(tmp_path: Path) -> None:
    seed(tmp_path / "stats.db", senders=[(s, "", 2 + i, MONTH, MONTH, 100, 0, 0) for i, s in enumerate(ODD_SENDERS)])
    with _viewer(tmp_path) as client:
        everyone = client.get("/api/senders").json()
        assert sorted(s["sender"] for s in everyone["senders"]) == sorted(ODD_SENDERS)
        for hidden in ODD_SENDERS[:3]:
            key = _register(client, [hidden])
            body = client.get("/api/senders", params={"hidden": key}).json()
            assert hidden not in [s["sender"] for s in body["senders"]]
            mails = 2 + ODD_SENDERS.index(hidden)
            assert (body["total"], body["total_messages"]) == (3, everyone["total_messages"] - mails)
            domains = client.get("/api/domains", params={"hidden": key}).json()
            assert (
                domains["total_messages"] == sum(d["mails_sent"] for d in domains["domains"]) == body["total_messages"]
            )
            volume = client.get("/api/volume", params={"hidden": key}).json()
            assert sum(m["messages"] for m in volume["months"]) + volume["undated"] == body["total_messages"]
            searched = client.get("/api/senders", params={"hidden": key, "q": "e"}).json()  # a filtered page too
            assert hidden not in [s["sender"] for s in searched["senders"]]


def test_an_unknown_or_malformed_set_is_refused_with_the_error_shape(site: Path) -> None:
    with viewer(make_settings(site)) as client:
        for path in ("/api/senders", "/api/domains", "/api/volume", "/api/export.csv"):
            unknown = client.get(path, params={"hidden": "0" * 32})
            assert unknown.status_code == 409
            assert unknown.json() == {
                "error": "hidden_unknown",
                "message": "this viewer does not hold that hidden set; send it again",
            }
            assert client.get(path, params={"hidden": "not-an-id"}).json()["error"] == "bad_request"


def test_a_restarted_viewer_has_forgotten_the_set(site: Path) -> None:
    with viewer(make_settings(site)) as client:
        key = _register(client, HIDDEN)
    with viewer(make_settings(site)) as client:
        assert client.get("/api/senders", params={"hidden": key}).json()["error"] == "hidden_unknown"


def test_old_sets_are_evicted_first(site: Path) -> None:
    with viewer(make_settings(site)) as client:
        keys = [_register(client, [f"n{i}@x.example"]) for i in range(MAX_SETS + 1)]
        assert client.get("/api/senders", params={"hidden": keys[0]}).status_code == 409
        assert client.get("/api/senders", params={"hidden": keys[-1]}).status_code == 200


def test_registering_is_a_write_with_the_write_rules_and_its_own_cap(site: Path) -> None:
    cap = BODY_CAPS["/api/hidden"]
    with viewer(make_settings(site)) as client:
        headers = csrf_headers(client)
        refused = client.post("/api/hidden", json={"senders": ["a@x"]}, headers={"Content-Type": "application/json"})
        assert (refused.status_code, refused.json()["error"]) == (403, "csrf")
        too_big = client.post("/api/hidden", content=b'{"senders": ["' + b"a" * cap + b'"]}', headers=headers)
        assert (too_big.status_code, too_big.json()["error"]) == (413, "too_large")
        too_long = client.post("/api/hidden", json={"senders": ["a" * 321]}, headers=headers)
        assert (too_long.status_code, too_long.json()["error"]) == (422, "bad_request")
        # The other writes keep the small cap.
        big_launch = client.post("/api/runs", content=b"{" + b" " * 20_000 + b"}", headers=headers)
        assert big_launch.status_code == 413
