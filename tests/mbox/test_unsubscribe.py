"""List-Unsubscribe(-Post) parsing and registrable domains: table-driven cases plus never-raise properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingester.records.headers import parse_header_block
from ingester.records.unsubscribe import MAX_TARGET, NONE, UnsubscribeTargets, parse_unsubscribe
from shared.text.domains import registrable_domain

ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.mark.parametrize(
    ("header", "post", "expected"),
    [
        (None, None, NONE),
        ("", ONE_CLICK, NONE),
        ("<mailto:u@x.org>", None, UnsubscribeTargets(None, "mailto:u@x.org", False)),
        (
            "<https://x.org/u?id=1>, <mailto:u@x.org?subject=stop>",
            ONE_CLICK,
            UnsubscribeTargets("https://x.org/u?id=1", "mailto:u@x.org?subject=stop", True),
        ),
        # One-click needs an HTTPS target (RFC 8058 section 3.1).
        ("<http://x.org/u>", ONE_CLICK, UnsubscribeTargets("http://x.org/u", None, False)),
        ("<mailto:u@x.org>", ONE_CLICK, UnsubscribeTargets(None, "mailto:u@x.org", False)),
        ("<https://x.org/u>", "List-Unsubscribe=Maybe", UnsubscribeTargets("https://x.org/u", None, False)),
        ("<https://x.org/u>", "list-unsubscribe=one-click", UnsubscribeTargets("https://x.org/u", None, True)),
        # Whitespace inside the brackets is ignored (RFC 2369 section 2); comments around are skipped.
        ("(c) <https://x.org/\n u>", None, UnsubscribeTargets("https://x.org/u", None, False)),
        # Unusable targets are dropped, never passed on.
        ("<javascript:alert(1)>, <ftp://x.org/u>", ONE_CLICK, NONE),
        ('<https://x.org/"><script>>', None, NONE),
        ("<https://user:pw@x.org/u>", None, NONE),
        ("<https:///nohost>", None, NONE),
        ("<https://[::1/u>", None, NONE),
        ("<mailto:nobody>", None, NONE),
        ("https://x.org/u", None, NONE),  # not bracketed
        ("<https://x.org/" + "a" * MAX_TARGET + ">", None, NONE),
        ("<https://x.org/\x00u>", None, NONE),
        ("<https://exämple.org/u>", None, NONE),  # raw non-ASCII is not a URI
        # The first usable one of each kind wins.
        (
            "<mailto:a@x.org>, <https://x.org/1>, <https://x.org/2>, <mailto:b@x.org>",
            None,
            UnsubscribeTargets("https://x.org/1", "mailto:a@x.org", False),
        ),
    ],
)
def test_parse_unsubscribe(header: str | None, post: str | None, expected: UnsubscribeTargets) -> None:
    assert parse_unsubscribe(header, post) == expected


@given(st.text(max_size=300), st.one_of(st.none(), st.text(max_size=80)))
def test_parse_unsubscribe_never_raises_and_keeps_only_safe_targets(header: str, post: str | None) -> None:
    found = parse_unsubscribe(header, post)
    if found.web is not None:
        assert found.web.lower().startswith(("https://", "http://")) and len(found.web) <= MAX_TARGET
        assert found.web.isascii() and found.web.isprintable() and " " not in found.web
    if found.mailto is not None:
        assert found.mailto.lower().startswith("mailto:") and "@" in found.mailto
    assert not found.one_click or (found.web is not None and found.web.lower().startswith("https://"))


@given(st.binary(max_size=400))
def test_header_block_with_unsubscribe_never_raises(noise: bytes) -> None:
    block = b"From: a@b.c\nList-Unsubscribe: " + noise + b"\nList-Unsubscribe-Post: " + noise[:40] + b"\n"
    fields = parse_header_block(block)
    parse_unsubscribe(fields.list_unsubscribe, fields.list_unsubscribe_post)


def test_header_block_reads_both_headers() -> None:
    fields = parse_header_block(
        b"From: a@b.c\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\nList-Unsubscribe:\n <https://b.c/u>\n"
    )
    assert (fields.list_unsubscribe, fields.list_unsubscribe_post) == ("<https://b.c/u>", ONE_CLICK)


@pytest.mark.parametrize(
    ("sender", "domain"),
    [
        ("a@mail.google.com", "google.com"),
        ("a@news.example.co.uk", "example.co.uk"),
        ("a@Foo.Example.CO.UK.", "example.co.uk"),
        ("a@someone.github.io", "someone.github.io"),  # a private suffix: each site is its own domain
        ("a@co.uk", "co.uk"),  # a bare public suffix is kept whole
        ("a@localhost", "localhost"),
        ("a@[192.0.2.1]", "[192.0.2.1]"),
        ("a@192.0.2.1", "192.0.2.1"),
        ("a@bücher.example.de", "example.de"),
        ("no-at-sign", ""),
        ("a@", ""),
        ("", ""),
    ],
)
def test_registrable_domain(sender: str, domain: str) -> None:
    assert registrable_domain(sender) == domain


@given(st.text(max_size=120))
def test_registrable_domain_never_raises(sender: str) -> None:
    assert isinstance(registrable_domain(sender), str)
