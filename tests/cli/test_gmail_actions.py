"""Gmail search links and filters files (`shared.actions`): escaping, splits, round trips."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from urllib.parse import quote, unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.actions.gmail_filters import (
    CRITERIA_LIMIT,
    MAX_FILTERS,
    FilterActions,
    filters_file,
    group_criteria,
    read_filters,
)
from shared.actions.gmail_search import (
    URL_LIMIT,
    Narrowing,
    encode,
    encoded_length,
    search_query,
    search_term,
    search_url,
    split_links,
    split_terms,
    valid_account,
)
from shared.errors import UsageError

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sender", "term"),
    [
        ("deals@mail.shop.co.uk", "deals@mail.shop.co.uk"),
        ("first.last+tag@example.com", "first.last+tag@example.com"),
        ("shop.co.uk", "shop.co.uk"),
        ("  padded@x.com ", "padded@x.com"),
        ("-negated@x.com", '"-negated@x.com"'),
        ("OR", '"OR"'),
        ("or", '"or"'),
        ("Mailer Daemon", '"Mailer Daemon"'),
        ('"john doe"@x.com', '"john doe @x.com"'),
        ("a)b@x.com", '"a)b@x.com"'),
        ("{a b}@x.com", '"{a b}@x.com"'),
        ("tab\there@x.com", '"tab here@x.com"'),
        ("müller@例え.jp", '"müller@例え.jp"'),
    ],
)
def test_search_term(sender: str, term: str) -> None:
    assert search_term(sender) == term


def test_search_query_and_narrowing() -> None:
    assert search_query(["a@x.com"]) == "from:a@x.com"
    everything = Narrowing(unread_only=True, older_than_months=6, larger_than_mb=5, in_inbox=True)
    assert (
        search_query(["a@x.com", "Mailer Daemon"], everything)
        == 'from:(a@x.com OR "Mailer Daemon") is:unread older_than:6m larger:5M in:inbox'
    )


def test_search_url_account() -> None:
    assert search_url("from:a@x.com") == "https://mail.google.com/mail/u/0/#search/from%3Aa%40x.com"
    assert (
        search_url("from:a@x.com", "me+work@gmail.com")
        == "https://mail.google.com/mail/?authuser=me%2Bwork@gmail.com#search/from%3Aa%40x.com"
    )


@pytest.mark.parametrize(
    ("address", "ok"),
    [("me@gmail.com", True), ("a.b+c@example.co.uk", True), ("me", False), ("a@b", False), ("a b@x.com", False)],
)
def test_valid_account(address: str, ok: bool) -> None:
    assert valid_account(address) is ok


def _query_of(url: str) -> str:
    return unquote(urlsplit(url).fragment.removeprefix("search/"))


def test_three_hundred_senders_split_into_links_under_the_limit() -> None:
    senders = [f"newsletter-{i:03d}@sender-{i:03d}.example.com" for i in range(300)]
    narrowing = Narrowing(unread_only=True, older_than_months=12)
    result = split_links(senders, narrowing, account="me@gmail.com")
    assert len(result.links) > 1
    assert result.left_out == ()
    named: list[str] = []
    for number, link in enumerate(result.links, start=1):
        assert link.number == number
        assert len(link.url) <= URL_LIMIT
        assert link.url.startswith("https://mail.google.com/mail/?authuser=me@gmail.com#search/")
        query = _query_of(link.url)
        assert query == link.query
        assert query.startswith("from:(") and query.endswith(") is:unread older_than:12m")
        named += split_terms(query.removeprefix("from:(").split(")")[0])
    assert named == senders
    # Greedy: no two neighbours could have shared one link.
    for a, b in zip(result.links, result.links[1:], strict=False):
        merged = search_url(search_query([*a.senders, *b.senders], narrowing), "me@gmail.com")
        assert len(merged) > URL_LIMIT


def test_split_links_dedupes_and_leaves_out_the_unlinkable() -> None:
    huge = "x" * 3000 + "@x.com"
    result = split_links(["a@x.com", "", huge, "a@x.com", " b@x.com", '"', "..."])
    assert [link.senders for link in result.links] == [("a@x.com", "b@x.com")]
    assert result.left_out == ("", huge, '"', "...")


_addresses = st.text(alphabet=string.printable + "äß例", min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.lists(_addresses, min_size=1, max_size=80, unique_by=str.strip), st.integers(300, 3000))
def test_links_name_every_sender_once_whatever_the_characters(senders: list[str], limit: int) -> None:
    result = split_links(senders, limit=limit)
    terms: list[str] = []
    for link in result.links:
        assert len(link.url) <= limit
        query = _query_of(link.url)
        inner = query.removeprefix("from:")
        if inner.startswith("(") and len(link.senders) > 1:
            inner = inner[1:-1]
        got = split_terms(inner)
        assert got == [search_term(s) for s in link.senders]  # no sender's text split or merged another's
        terms += got
    kept = [s.strip() for s in senders if s.strip() and s not in result.left_out]
    assert terms == [search_term(s) for s in kept]


ALL_ACTIONS = FilterActions(archive=True, mark_read=True, trash=True, never_spam=True, label="Newsletters & <co>")


def test_filters_file_parses_back_to_the_same_senders_and_actions() -> None:
    senders = [f"newsletter-{i:03d}@sender-{i:03d}.example.com" for i in range(300)] + ['odd "quoted" <x>@y.com']
    made = filters_file(senders, ALL_ACTIONS, now=NOW, author="me@gmail.com")
    assert made.senders == len(senders)
    assert made.left_out == ()
    parsed = read_filters(made.xml)
    assert len(parsed) == made.filters
    assert made.filters == len(group_criteria(senders)[0])
    assert [t for f in parsed for t in f.terms] == [search_term(s) for s in senders]
    assert all(f.actions == ALL_ACTIONS for f in parsed)
    assert made.xml.startswith("<?xml version='1.0' encoding='UTF-8'?>")
    assert "&amp;" in made.xml and "&lt;co&gt;" in made.xml and "<apps:property" in made.xml


def test_filters_are_as_few_as_the_limit_allows() -> None:
    senders = [f"s{i:04d}@example.com" for i in range(1000)]  # 17 characters each, 21 with " OR "
    values, _ = group_criteria(senders)
    assert all(len(v) <= CRITERIA_LIMIT for v in values)
    per_filter = (CRITERIA_LIMIT + 4) // 21
    assert len(values) == -(-len(senders) // per_filter)
    one = filters_file(["only@example.com"], FilterActions(archive=True), now=NOW)
    assert read_filters(one.xml) == [read_filters(one.xml)[0]]
    assert read_filters(one.xml)[0].terms == ("only@example.com",)


@pytest.mark.parametrize(
    ("actions", "senders", "message"),
    [
        (FilterActions(), ["a@x.com"], "choose at least one filter action"),
        (FilterActions(label="   "), ["a@x.com"], "choose at least one filter action"),
        (FilterActions(label="a\nb"), ["a@x.com"], "the label must be"),
        (FilterActions(archive=True), ["", "  ", '"'], "no sender to write a filter for"),
        (
            FilterActions(archive=True),
            [f"sender-{i:07d}@example.com" for i in range(40 * MAX_FILTERS)],
            "filters and Gmail keeps at most 1,000",
        ),
    ],
)
def test_filters_file_refusals(actions: FilterActions, senders: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        filters_file(senders, actions, now=NOW)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_encode_is_quote(text: str) -> None:
    assert encode(text) == quote(text, safe="")
    assert encoded_length(text) == len(quote(text, safe=""))
