"""`/api/gmail/links` and `/api/gmail/filters.xml` over a real seeded SQLite file and the real app."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from shared.actions.gmail_filters import FilterActions, read_filters
from shared.actions.gmail_search import URL_LIMIT, search_term, split_terms
from tests.support.viewer import csrf_headers, make_settings, seed, viewer

MANY = [(f"news-{i:03d}@sender-{i:03d}.example.com", f"News {i}", 1000 - i, 1, 2, 10, 1, 0) for i in range(300)]


def _named(links: list[dict[str, object]]) -> list[str]:
    terms: list[str] = []
    for link in links:
        url = str(link["url"])
        assert len(url) <= URL_LIMIT
        query = unquote(urlsplit(url).fragment.removeprefix("search/"))
        assert query == link["query"]
        inner = query.removeprefix("from:").split(" is:")[0]
        terms += split_terms(inner[1:-1] if inner.startswith("(") else inner)
    return terms


def test_links_for_every_matching_sender_in_the_account(tmp_path: Path, db_path: Path) -> None:
    seed(db_path, senders=MANY)
    with viewer(make_settings(tmp_path)) as client:
        answer = client.get("/api/gmail/links", params={"address": "me@gmail.com", "unread": "true"})
        assert answer.status_code == 200
        body = answer.json()
        assert body["senders"] == 300 and body["left_out"] == []
        assert sum(link["senders"] for link in body["links"]) == 300
        assert [link["number"] for link in body["links"]] == list(range(1, len(body["links"]) + 1))
        assert all(
            link["url"].startswith("https://mail.google.com/mail/?authuser=me@gmail.com#search/")
            for link in body["links"]
        )
        assert all(link["query"].endswith(" is:unread") for link in body["links"])
        assert _named(body["links"]) == [s[0] for s in MANY]  # most mail first, as the table lists them

        narrowed = client.get("/api/gmail/links", params={"q": "news-007"}).json()
        assert narrowed["links"][0]["query"] == "from:news-007@sender-007.example.com"
        assert narrowed["links"][0]["url"].startswith("https://mail.google.com/mail/u/0/#search/")

        bad = client.get("/api/gmail/links", params={"address": "not an address"})
        assert bad.status_code == 422
        assert bad.json()["error"] == "bad_request"


def test_links_and_filters_for_a_registered_selection(tmp_path: Path, db_path: Path) -> None:
    seed(db_path, senders=MANY)
    picked = [s[0] for s in MANY[::3]]
    with viewer(make_settings(tmp_path)) as client:
        set_id = client.post("/api/hidden", json={"senders": picked}, headers=csrf_headers(client)).json()["hidden"]
        links = client.get("/api/gmail/links", params={"selected": set_id}).json()
        assert sorted(_named(links["links"])) == sorted(picked)

        params = {"selected": set_id, "archive": "true", "mark_read": "true", "label": "Old news"}
        response = client.get("/api/gmail/filters.xml", params=params)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/xml; charset=utf-8"
        assert response.headers["content-disposition"] == 'attachment; filename="gmail-stats-filters.xml"'
        parsed = read_filters(response.text)
        assert response.headers["x-gmail-stats-filters"] == str(len(parsed))
        assert sorted(t for f in parsed for t in f.terms) == sorted(search_term(s) for s in picked)
        assert {f.actions for f in parsed} == {FilterActions(archive=True, mark_read=True, label="Old news")}

        none = client.get("/api/gmail/filters.xml", params={"selected": set_id})
        assert none.status_code == 422
        assert none.json() == {
            "error": "bad_request",
            "message": "choose at least one filter action: archive, mark read, label, delete or never spam",
        }
        unknown = client.get("/api/gmail/links", params={"selected": "0" * 32})
        assert unknown.status_code == 409
        assert unknown.json()["error"] == "hidden_unknown"


def test_hostile_senders_cannot_change_the_query_or_the_file(tmp_path: Path, db_path: Path) -> None:
    odd = ['"x) OR from:(me@gmail.com"@evil.example', "OR", "-minus@x.example", "a&b<c>@x.example", "!!!"]
    seed(db_path, senders=[(s, "", 3, 1, 2, 10, 0, 0) for s in odd], through_store=False)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/gmail/links").json()
        assert body["left_out"] == ["!!!"]
        (link,) = body["links"]
        terms = split_terms(link["query"].removeprefix("from:(").removesuffix(")"))
        assert sorted(terms) == sorted(search_term(s) for s in odd[:4])
        assert all(t.startswith('"') and t.endswith('"') for t in terms)  # each one quoted phrase
        response = client.get("/api/gmail/filters.xml", params={"trash": "true"})
        assert response.status_code == 200
        assert response.headers["x-gmail-stats-senders"] == "4"
        (parsed,) = read_filters(response.text)
        assert sorted(parsed.terms) == sorted(terms)
        assert parsed.actions == FilterActions(trash=True)
