"""Address first, words second: the sender key is the address `email.headerregistry` reads in the raw header, and
encoded-words are decoded only in the display name, by one function for the import and the scan alike."""

from __future__ import annotations

import dataclasses
from email.headerregistry import AddressHeader, HeaderRegistry
from pathlib import Path

import pytest

from ingester.gmail.gmail import MessageMeta
from ingester.gmail.gmail_records import metadata_record
from ingester.mbox.regions import Postmark, Region
from ingester.mbox.takeout import judge_region
from ingester.records import MailRecord
from shared.text.normalize import SenderIdentity, parse_sender
from tests.conftest import run_cli
from tests.support.importing import query
from tests.support.scan import fake_google, sender_counts

WORD_AS_ADDRESS = (
    "encoded-words where the address should be (RFC 2047 section 5 allows none there); counted under the raw text"
)
# (From value, what it counts as); the first five are issue 20's impersonations.
CASES = [
    (
        "=?utf-8?q?ceo=40bank=2Eexample?= <spammer@evil.example>",
        SenderIdentity("spammer@evil.example", "ceo@bank.example"),
    ),
    (
        "=?utf-8?b?PGNlb0BiYW5rLmV4YW1wbGU+?= <spammer@evil.example>",
        SenderIdentity("spammer@evil.example", "<ceo@bank.example>"),
    ),
    (
        "=?utf-8?q?Doe=2C_John_=3Cjd=40other.example=3E?= <john@x.example>",
        SenderIdentity("john@x.example", "Doe, John <jd@other.example>"),
    ),
    # A literal `@` or `<` inside a word is no structure either (the standard library agrees).
    ("=?utf-8?q?ceo@bank.example?= <spammer@evil.example>", SenderIdentity("spammer@evil.example", "ceo@bank.example")),
    (
        "=?utf-8?q?x_=3Cceo=40bank.example=3E?= <s@evil.example>",
        SenderIdentity("s@evil.example", "x <ceo@bank.example>"),
    ),
    # No address outside the words: never the decoded one.
    ("=?utf-8?q?ceo=40bank.example?=", SenderIdentity("=?utf-8?q?ceo=40bank.example?=", "", WORD_AS_ADDRESS)),
    ("=?utf-8?q?ceo@bank.example?=", SenderIdentity("=?utf-8?q?ceo@bank.example?=", "", WORD_AS_ADDRESS)),
    # A word inside the addr-spec stays raw: it is that (odd) address, not the one it decodes to.
    ("=?utf-8?q?a=40b.c?=@x.example", SenderIdentity("=?utf-8?q?a=40b.c?=@x.example", "")),
    # Ordinary names still decode.
    ("=?utf-8?q?J=C3=B6rg?= <j@x.org>", SenderIdentity("j@x.org", "Jörg")),
    ('"=?utf-8?q?Caf=C3=A9?=" <a@b.c>', SenderIdentity("a@b.c", "Café")),
    ("a@b.c (=?utf-8?q?Caf=C3=A9?=)", SenderIdentity("a@b.c", "Café")),
    ("=?utf-8?q?Caf=C3=A9?=", SenderIdentity("Café", "")),
    # Pipermail's `user at host (Name)` is the address and name it stands for; ordinary words with "at" are not.
    ("jdoe at Lists.Example.org (John Doe)", SenderIdentity("jdoe@lists.example.org", "John Doe")),
    ("jdoe at lists.example.org (=?utf-8?q?J=C3=B6rg?=)", SenderIdentity("jdoe@lists.example.org", "Jörg")),
    ("jdoe at lists.example.org", SenderIdentity("jdoe@lists.example.org", "")),
    ("Meet me at home (now)", SenderIdentity("Meet me at home (now)", "")),
    ("jdoe at lists.example.org <real@x.example>", SenderIdentity("real@x.example", "jdoe at lists.example.org")),
]


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_the_address_is_read_before_the_words(value: str, expected: SenderIdentity) -> None:
    assert parse_sender(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [c for c in CASES if "@" in c[1].key and c[1].problem is None and " at " not in c[0]]
)
def test_the_address_is_the_one_the_standard_library_reads(value: str, expected: SenderIdentity) -> None:
    header = HeaderRegistry()("From", value)
    assert isinstance(header, AddressHeader)
    (address,) = header.addresses
    if "=?" in expected.key:  # the library decodes a word even inside an addr-spec; we keep it raw there
        assert address.domain == expected.key.rsplit("@", 1)[1]
    else:
        assert address.addr_spec == expected.key


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_the_import_and_the_scan_read_a_sender_alike(value: str, expected: SenderIdentity) -> None:
    block = f"From: {value}\nMessage-ID: <1@x>\n".encode()
    region = Region(0, len(block), Postmark(b"1@xxx", b"From 1@xxx Fri Dec 04 20:33:24 +0000 2020"), block)
    imported = judge_region(region, include_spam_trash=False, warnings=[], now=2e9)
    scanned = metadata_record(MessageMeta("18c6", ("INBOX",), 10, 1_600_000_000_000, (("From", value),)), now=2e9)
    assert isinstance(imported, MailRecord)
    assert (imported.sender, imported.display_name) == (scanned.sender, scanned.display_name)
    assert (imported.sender, imported.display_name) == (expected.key, expected.display_name)


def test_impersonating_words_in_the_gmail_scan_count_under_the_real_address(tmp_path: Path) -> None:
    with fake_google(tmp_path, 60) as g:
        box = g.google.mailbox
        forged = [value for value, expected in CASES[:5]]
        targets = [i for i in box.order if not box.messages[i].excluded][: len(forged)]
        for gmail_id, value in zip(targets, forged, strict=True):
            message = box.messages[gmail_id]
            headers = tuple((k, value if k == "From" else v) for k, v in message.headers)
            box.messages[gmail_id] = dataclasses.replace(message, headers=headers)
        result = g.scan()
        assert result.returncode == 0, result.stderr
        counts = sender_counts(g.db)
        assert (counts.get("spammer@evil.example"), counts.get("john@x.example"), counts.get("s@evil.example")) == (
            3,
            1,
            1,
        )
        assert not {"ceo@bank.example", "jd@other.example"} & set(counts)


def test_a_pipermail_archive_counts_people_by_address(tmp_path: Path, db_path: Path) -> None:
    def message(n: int, who: str, name: str) -> bytes:
        return (
            f"From {who} at lists.example.org  Mon Jan  1 10:00:{n:02d} 2007\n"
            f"From: {who} at lists.example.org ({name})\nMessage-ID: <{n}@x>\n"
            f"Date: Mon, 01 Jan 2007 10:00:{n:02d} +0000\n\nbody\n\n"
        ).encode()

    path = tmp_path / "2007-January.txt"
    path.write_bytes(message(1, "ann", "Ann A") + message(2, "bob", "Bob B") + message(3, "ann", "Ann Again"))
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    rows = query(db_path, "SELECT sender, display_name, domain, mails_sent FROM senders ORDER BY sender")
    assert rows == [
        ("ann@lists.example.org", "Ann Again", "example.org", 2),
        ("bob@lists.example.org", "Bob B", "example.org", 1),
    ]
