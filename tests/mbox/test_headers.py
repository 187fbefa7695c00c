"""Header extraction (rules 2, 3, 7) and sender/Message-ID/label rules (4, 5, 6) as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingester.records.headers import HeaderFields, parse_date, parse_header_block
from shared.text.normalize import (
    SenderIdentity,
    collapse_whitespace,
    decode_rfc2047,
    is_excluded,
    is_unread,
    normalize_message_id,
    parse_labels,
    parse_sender,
)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (b"From: a@b.c\n", HeaderFields(True, from_="a@b.c")),
        (b"FROM: a@b.c\nfrom: second@b.c\n", HeaderFields(True, from_="a@b.c")),
        (b"From:\nFrom:   \nFrom: third@b.c\n", HeaderFields(True, from_="third@b.c")),
        (b"From: Long\n Name\n\t<a@b.c>\n", HeaderFields(True, from_="Long Name\t<a@b.c>")),
        (b"From: Long\r\n Name <a@b.c>\r\nDate: x\r\n", HeaderFields(True, from_="Long Name <a@b.c>", date="x")),
        (b"From : spaced@b.c\n", HeaderFields(True, from_="spaced@b.c")),
        (b"Fromage: no\nX: y\n", HeaderFields(True)),
        (b"From no colon\nX: y\n", HeaderFields(True)),
        (b": colon first\nX: y\n", HeaderFields(True)),
        (b": colon first\nno colon at all\n", HeaderFields(False)),
        (b"", HeaderFields(False)),
        (b" continuation: only\n", HeaderFields(False)),
        (
            b"Sender: s@b.c\nReturn-Path: <r@b.c>\nMessage-ID: <m@x>\nX-Gmail-Labels: Inbox,Unread\n"
            b"List-Unsubscribe: <mailto:u@x>\n",
            HeaderFields(
                True,
                sender="s@b.c",
                return_path="<r@b.c>",
                message_id="<m@x>",
                gmail_labels="Inbox,Unread",
                list_unsubscribe="<mailto:u@x>",
            ),
        ),
        (b"Subject: secret\nFrom: a@b.c\n", HeaderFields(True, from_="a@b.c")),
        (b"From: J\xf6rg <j@b.c>\n", HeaderFields(True, from_="J\xf6rg <j@b.c>")),
    ],
)
def test_parse_header_block(block: bytes, expected: HeaderFields) -> None:
    assert parse_header_block(block) == expected


@given(st.binary(max_size=2000))
def test_headers_never_raise_on_arbitrary_bytes(block: bytes) -> None:
    fields = parse_header_block(block)
    assert isinstance(fields, HeaderFields)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Fri, 04 Dec 2020 20:33:24 +0000", 1607114004),
        ("4 Dec 2020 21:33:24 +0100", 1607114004),
        ("Fri, 04 Dec 2020 15:33:24 -0500 (EST)", 1607114004),
        ("Fri, 4 Dec 2020 20:33:24 GMT", 1607114004),
        ("Friday, 04-Dec-20 20:33:24 GMT", 1607114004),
        ("not a date", None),
        ("", None),
        (None, None),
        ("Fri, 04 Dec 99999 20:33:24 +0000", None),
        # Before 1971 is a placeholder or a misread year: unknown, never 0 or negative.
        ("Sat, 18 May 0102 10:00:00 +0000", None),
        ("Thu, 01 Jan 1970 00:00:00 +0000", None),
        ("Fri, 31 Dec 1970 23:59:59 +0000", None),
        ("Fri, 01 Jan 1971 00:00:00 +0000", 31536000),
        ("Fri, 04 Dec 2020 20:33:24 +0000" + " x" * 100_000, 1607114004),
    ],
)
def test_parse_date(value: str | None, expected: int | None) -> None:
    assert parse_date(value) == expected


@given(st.text(max_size=80))
def test_parse_date_never_raises(value: str) -> None:
    result = parse_date(value)
    assert result is None or isinstance(result, int)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Alice <Alice@Example.COM>", SenderIdentity("alice@example.com", "Alice")),
        ('"Doe, John" <jd@x.org>', SenderIdentity("jd@x.org", "Doe, John")),
        ("plain@x.org", SenderIdentity("plain@x.org", "")),
        ("=?utf-8?q?J=C3=B6rg?= <j@x.org>", SenderIdentity("j@x.org", "Jörg")),
        ("=?iso-8859-1?b?SvZyZw==?= <j@x.org>", SenderIdentity("j@x.org", "Jörg")),
        ("undisclosed, second <s@x.org>", SenderIdentity("s@x.org", "second")),
        ("  Mail   Delivery\tSystem  ", SenderIdentity("Mail Delivery System", "")),
        ("=?x-unknown?q?abc?= <u@x.org>", SenderIdentity("u@x.org", "abc", "unknown charset 'x-unknown'")),
        ("=?utf-8?q?broken", SenderIdentity("=?utf-8?q?broken", "")),
        # Broken words and charsets that cannot decode stay raw; the address in <...> is still the key.
        (
            "=?utf-7?B?K2dtQ?= <Eve@x.org>",
            SenderIdentity("eve@x.org", "=?utf-7?B?K2dtQ?=", "broken encoded-word (charset 'utf-7')"),
        ),
        (
            "=?idna?Q?xn--abc?= <i@x.org>",
            SenderIdentity("i@x.org", "=?idna?Q?xn--abc?=", "charset 'idna' could not decode its text"),
        ),
        ("=?utf-7?B?K2dtQ?=", SenderIdentity("=?utf-7?B?K2dtQ?=", "", "broken encoded-word (charset 'utf-7')")),
        ("=?base64?q?abc?= <b@x.org>", SenderIdentity("b@x.org", "abc", "unknown charset 'base64'")),
        ("=?utf-8?q?=C3?= =?utf-8?q?=B6?= <s@x.org>", SenderIdentity("s@x.org", "ö")),  # one character, two words
        ("=?utf-8?b?SvZyZw?= <p@x.org>", SenderIdentity("p@x.org", "J\ufffdrg")),  # missing padding is fine
        ("=?ISO-8859-1*de?Q?J=F6rg?= <l@x.org>", SenderIdentity("l@x.org", "Jörg")),  # RFC 2231 language
        ("(" * 5000 + "<deep@x.org>", SenderIdentity("deep@x.org", "(" * 5000)),
        ("x" * 5000 + " <Long@X.org>", SenderIdentity("long@x.org", "x" * 5000)),
        ("y" * 5000 + " bare@x.org more", SenderIdentity("bare@x.org", "")),
    ],
)
def test_parse_sender(value: str, expected: SenderIdentity) -> None:
    assert parse_sender(value) == expected


@given(st.text(max_size=60))
def test_sender_key_is_idempotent(value: str) -> None:
    key = parse_sender(value).key
    if "=?" not in key:
        assert parse_sender(key).key == key


@given(st.text(max_size=60))
def test_collapse_whitespace_is_idempotent(value: str) -> None:
    once = collapse_whitespace(value)
    assert collapse_whitespace(once) == once


@given(st.text(max_size=60))
def test_sender_rules_never_raise(value: str) -> None:
    assert isinstance(parse_sender(value), SenderIdentity)
    assert isinstance(decode_rfc2047(value), str)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("<abc@x>", "abc@x"),
        ("  < abc@x >  ", "abc@x"),
        ("abc@x", "abc@x"),
        ("<<abc@x>>", "<abc@x>"),
        ("<>", None),
        ("   ", None),
        ("<abc@x", "<abc@x"),
        ("1234567890", "1234567890"),
    ],
)
def test_normalize_message_id(value: str, expected: str | None) -> None:
    assert normalize_message_id(value) == expected


@pytest.mark.parametrize(
    ("value", "labels", "excluded", "excluded_with_spam", "unread"),
    [
        ("Inbox,Unread", ("Inbox", "Unread"), False, False, True),
        ("Spam,Unread", ("Spam", "Unread"), True, False, True),
        ("Trash", ("Trash",), True, False, False),
        ("Chat", ("Chat",), True, True, False),
        ("Archived, Category Promotions ,Opened", ("Archived", "Category Promotions", "Opened"), False, False, False),
        ("=?UTF-8?Q?Inbox,Tr=C3=A4sh?=", ("Inbox", "Träsh"), False, False, False),
        ("", (), False, False, False),
    ],
)
def test_labels(value: str, labels: tuple[str, ...], excluded: bool, excluded_with_spam: bool, unread: bool) -> None:
    assert parse_labels(value) == labels
    assert is_excluded(labels, include_spam_trash=False) is excluded
    assert is_excluded(labels, include_spam_trash=True) is excluded_with_spam
    assert is_unread(labels) is unread
