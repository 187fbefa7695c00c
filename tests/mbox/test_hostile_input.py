"""No poison header: every decoder is total on arbitrary input, and a hostile header never stops a run or a count."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingester.gmail.gmail import MessageMeta
from ingester.gmail.gmail_records import metadata_record, record_from_meta
from ingester.mbox.mbox import iter_regions
from ingester.mbox.regions import Postmark, Region
from ingester.mbox.takeout import Skip, judge_region, label_facts
from ingester.records import MailRecord
from ingester.records.headers import HeaderFields, parse_date, parse_header_block
from shared.mbox_format import sniff_mbox
from shared.text.normalize import (
    Labels,
    SenderIdentity,
    decode_labels,
    decode_rfc2047,
    normalize_message_id,
    parse_labels,
    parse_sender,
)
from shared.text.rfc2047 import decode_words
from tests.conftest import run_cli
from tests.support.importing import query, senders_of
from tests.support.scan import fake_google, runs, sender_counts

POISON_FROM = "=?utf-7?B?K2dtQ?= <poison@example.com>"
CHARSETS = ["utf-8", "utf-7", "idna", "punycode", "base64", "rot13", "undefined", "unicode_escape", "utf-16", "x-y"]

# Text with encoded-words of every odd kind among arbitrary characters.
_encoded_word = st.builds(
    lambda charset, encoding, text: f"=?{charset}?{encoding}?{text}?=",
    st.one_of(st.sampled_from(CHARSETS), st.text(max_size=12)),
    st.sampled_from(["B", "Q", "b", "q"]),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FF), max_size=30),
)
_hostile_text = st.lists(st.one_of(_encoded_word, st.text(max_size=20), st.sampled_from([" ", "<a@b.c>", "("]))).map(
    "".join
)


@settings(max_examples=300, deadline=None)
@given(_hostile_text)
def test_text_decoders_never_raise(value: str) -> None:
    assert isinstance(decode_words(value).text, str)
    assert isinstance(decode_rfc2047(value), str)
    assert isinstance(parse_sender(value), SenderIdentity)
    assert isinstance(parse_labels(value), tuple)
    assert isinstance(decode_labels(value), Labels)
    assert normalize_message_id(value) is None or isinstance(normalize_message_id(value), str)
    assert label_facts(value).joined is not None
    date = parse_date(value)
    assert date is None or date >= 31_536_000


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_byte_decoders_never_raise(raw: bytes) -> None:
    text = raw.decode("latin-1")
    assert isinstance(parse_sender(text), SenderIdentity)
    assert isinstance(parse_header_block(raw), HeaderFields)
    region = Region(0, len(raw), Postmark(b"1@xxx", b"From 1@xxx " + raw[:40]), raw)
    length = Region(0, len(raw) + 99, region.postmark, b"Content-Length: " + raw[:20] + b"\n")
    assert isinstance(judge_region(length, include_spam_trash=False, warnings=[], now=2e9), (MailRecord, Skip))
    warnings: list[str] = []
    verdict = judge_region(region, include_spam_trash=False, warnings=warnings, now=2e9)
    assert isinstance(verdict, (MailRecord, Skip))
    assert sniff_mbox(io.BytesIO(raw)).reason is not None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from([1, 3, 64, 4096]))
def test_framing_tiles_any_bytes(data: bytes, chunk: int) -> None:
    got = list(iter_regions(io.BytesIO(data), chunk=chunk))
    for before, after in itertools.pairwise(got):
        assert before.end == after.start
    if got:
        assert got[-1].end == len(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["From", "Date", "Message-ID", "Sender", "X"]), _hostile_text), max_size=6))
def test_scan_metadata_records_never_raise(headers: list[tuple[str, str]]) -> None:
    meta = MessageMeta("18c6", ("INBOX",), 10, 1_600_000_000_000, tuple(headers))
    warnings: list[str] = []
    assert isinstance(metadata_record(meta, now=2e9, warnings=warnings), MailRecord)
    assert isinstance(record_from_meta(meta), MailRecord)


def test_separator_placeholder_and_impossible_dates_are_unknown(tmp_path: Path, db_path: Path) -> None:
    placeholder = b"From MAILER-DAEMON Thu Jan  1 00:00:00 1970\n"
    path = tmp_path / "dates.mbox"
    path.write_bytes(
        placeholder
        + b"From: a@x\nMessage-ID: <1@x>\nDate: not a date\n\nx\n"
        + placeholder
        + b"From: a@x\nMessage-ID: <2@x>\nDate: Sat, 18 May 0102 10:00:00 +0000\n\nx\n"
        + placeholder
        + b"From: a@x\nMessage-ID: <3@x>\nDate: Sat, 18 May 2999 10:00:00 +0000\n\nx\n"
        + placeholder
        + b"From: a@x\nMessage-ID: <4@x>\nDate: Fri, 04 Dec 2020 20:33:24 +0000\n\nx\n"
        + placeholder
        + b"From: b@x\nMessage-ID: <5@x>\n\nx\n"
    )
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert query(db_path, "SELECT date_unix FROM seen_mails ORDER BY id") == [
        (None,),
        (None,),
        (None,),
        (1607114004,),
        (None,),
    ]
    a, b = senders_of(db_path)["a@x"], senders_of(db_path)["b@x"]
    assert (a["mails_sent"], a["first_seen_unix"], a["last_seen_unix"]) == (4, 1607114004, 1607114004)
    assert (b["mails_sent"], b["first_seen_unix"], b["last_seen_unix"]) == (1, None, None)
    ((count, tail),) = query(db_path, "SELECT warnings_count, warnings_tail FROM ingest_runs")
    assert count == 3 and all("Date header unreadable or implausible" in w for w in json.loads(tail))


def test_poison_from_header_imports_completely_through_the_cli(tmp_path: Path, db_path: Path) -> None:
    def message(n: int, sender: str) -> bytes:
        return b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: %s\n\nbody\n" % (10**18 + n, sender.encode())

    path = tmp_path / "poison.mbox"
    poison = message(1, POISON_FROM)
    path.write_bytes(poison + message(2, "=?idna?Q?xn--abc?=") + message(3, "Fine <fine@example.com>"))
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert {k: v["mails_sent"] for k, v in senders_of(db_path).items()} == {
        "poison@example.com": 1,
        "=?idna?Q?xn--abc?=": 1,
        "fine@example.com": 1,
    }
    ((state, outcome, seen, count, tail),) = query(
        db_path, "SELECT state, outcome, messages_seen, warnings_count, warnings_tail FROM ingest_runs"
    )
    assert (state, outcome, seen, count) == ("done", "complete", 3, 2)
    assert json.loads(tail)[0] == (
        f"bytes 0-{len(poison)}: sender header: broken encoded-word (charset 'utf-7'); counted as is"
    )


def test_poison_headers_in_the_gmail_scan_count_every_message(tmp_path: Path) -> None:
    with fake_google(tmp_path, 201) as g:
        box = g.google.mailbox
        poisoned = [i for i in box.order if not box.messages[i].excluded][:3]
        values = [POISON_FROM, "=?idna?Q?xn--abc?=", "=?x-unknown?B?////?= <u@example.com>"]
        for gmail_id, sender in zip(poisoned, values, strict=True):
            message = box.messages[gmail_id]
            odd = {"From": sender, "Date": "Sat, 18 May 0102 10:00:00 +0000"}
            headers = tuple((k, odd.get(k, v)) for k, v in message.headers)
            box.messages[gmail_id] = dataclasses.replace(message, headers=headers)
        result = g.scan()
        assert result.returncode == 0, result.stderr
        expected = box.expected_counts()
        assert sender_counts(g.db) == expected
        assert expected["poison@example.com"] >= 1
        run = runs(g.db)[-1]
        listed = len(box.listed(include_spam_trash=False))
        assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", listed)
        assert sum(expected.values()) == listed
        tail = json.loads(str(run["warnings_tail"]))
        assert sum("sender header" in w for w in tail) == 3
        assert sum("Date header unreadable" in w for w in tail) == 3
        with sqlite3.connect(g.db) as conn:
            dates = conn.execute(
                "SELECT count(*) FROM seen_mails WHERE date_unix IS NULL OR date_unix < 31536000"
            ).fetchone()
        conn.close()
        assert dates == (0,)  # Gmail's own date stands in for the impossible ones


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Inbox,Unread", Labels(("Inbox", "Unread"))),
        (" Inbox , Important,,Category Promotions ", Labels(("Inbox", "Important", "Category Promotions"))),
        ("=?UTF-8?Q?Caf=C3=A9?=,Inbox", Labels(("Café", "Inbox"))),
        ("=?utf-7?B?K2dtQ?=,Inbox", Labels(("=?utf-7?B?K2dtQ?=", "Inbox"), "broken encoded-word (charset 'utf-7')")),
        ("=?x-nope?Q?abc?=", Labels(("abc",), "unknown charset 'x-nope'")),
        ("Inbox,Un\x00read", Labels(("Inbox", "Un\x00read"), "control characters in label names")),
        (",,, ,", Labels((), "no label name in it")),
        ("", Labels(())),
    ],
)
def test_decode_labels_notes_what_is_odd(value: str, expected: Labels) -> None:
    assert decode_labels(value) == expected


def test_odd_labels_warn_with_their_offset_and_still_count(tmp_path: Path, db_path: Path) -> None:
    def message(n: int, labels: bytes) -> bytes:
        return (
            b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nX-Gmail-Labels: %s\nFrom: a@example.com\n"
            b"Message-ID: <%d@x>\n\nbody\n" % (10**18 + n, labels, n)
        )

    fine = message(1, b"Inbox")
    odd = message(2, b"=?utf-7?B?K2dtQ?=,Unread")
    spam = message(3, b"Spam,\x01")
    path = tmp_path / "labels.mbox"
    path.write_bytes(fine + odd + spam)
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    # Counted best-effort: the odd value still says Unread; the Spam one is still excluded.
    assert query(db_path, "SELECT mail_id, labels, unread FROM seen_mails ORDER BY id") == [
        ("mid:1@x", "Inbox", 0),
        ("mid:2@x", "=?utf-7?B?K2dtQ?=,Unread", 1),
    ]
    ((state, outcome, excluded, count, tail),) = query(
        db_path, "SELECT state, outcome, messages_excluded, warnings_count, warnings_tail FROM ingest_runs"
    )
    assert (state, outcome, excluded, count) == ("done", "complete", 1, 2)
    start, end = len(fine), len(fine) + len(odd)
    assert json.loads(tail) == [
        f"bytes {start}-{end}: X-Gmail-Labels header: broken encoded-word (charset 'utf-7'); read as is",
        f"bytes {end}-{end + len(spam)}: X-Gmail-Labels header: control characters in label names; read as is",
    ]


@pytest.mark.parametrize(
    ("zone", "expected_unix", "note"),
    [
        (b"MEST", 886986334 - 7200, None),
        (b"-0400", 886986334 + 4 * 3600, None),
        (b"XYZT", 886986334, "separator time zone 'XYZT' unknown; its date read as UTC"),
    ],
)
def test_separator_date_fallback_applies_named_zones(zone: bytes, expected_unix: int, note: str | None) -> None:
    data = b"From bob@example.com Wed Feb  9 01:05:34 1998 " + zone + b"\nFrom: a@b.c\nDate: nonsense\n\nx\n"
    (region,) = iter_regions(io.BytesIO(data))
    warnings: list[str] = []
    record = judge_region(region, include_spam_trash=False, warnings=warnings, now=2e9)
    assert isinstance(record, MailRecord) and record.date_unix == expected_unix
    unreadable = f"bytes 0-{len(data)}: Date header unreadable or implausible"
    assert warnings == [unreadable] + ([f"bytes 0-{len(data)}: {note}"] if note else [])
