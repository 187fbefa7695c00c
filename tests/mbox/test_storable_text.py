"""Every decoded text is storable: lone surrogates become U+FFFD with a warning, and a record the database still
refuses is skipped alone (the batch is bisected), so one message can never make a file or a scan uncountable."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from ingester.gmail.gmail import MessageMeta
from ingester.gmail.gmail_records import metadata_record
from ingester.mbox.mbox import iter_regions
from ingester.mbox.regions import Postmark, Region
from ingester.mbox.takeout import judge_region, label_facts
from ingester.records import MailRecord
from ingester.records.headers import parse_header_block
from ingester.store.store_guard import MAX_REJECTED, count_batch_guarded
from shared.runs import create_run
from shared.schema.models import Source
from shared.text.normalize import decode_labels, decode_rfc2047, parse_sender
from shared.text.rfc2047 import decode_words
from tests.conftest import run_cli
from tests.support.importing import query
from tests.support.scan import fake_google, runs, sender_counts

SURROGATE_NOTE = "it decoded to invalid Unicode (lone surrogates), replaced with U+FFFD"
# Issue 20's words: each decodes to a lone surrogate with Python's codecs.
CRAFTED_WORDS = [
    "=?utf-7?Q?+2AA-?=",
    "=?UTF-7?B?KzJBQS0=?=",
    "=?utf7?Q?+2AA-?=",
    "=?unicode-1-1-utf-7?Q?+2AA-?=",
    "=?punycode?Q?a-l75g?=",
]
CHARSETS = ["utf-7", "utf7", "unicode-1-1-utf-7", "punycode", "idna", "utf-16", "utf-32", "utf-8", "x-y"]


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.mark.parametrize("word", CRAFTED_WORDS)
def test_crafted_words_decode_to_replacement_characters_with_a_note(word: str) -> None:
    decoded = decode_words(f"{word} <a@b.example>")
    assert _storable(decoded.text) and "\ufffd" in decoded.text
    assert decoded.problem is not None and decoded.problem.endswith(SURROGATE_NOTE)
    sender = parse_sender(f"{word} <a@b.example>")
    assert sender.key == "a@b.example" and "\ufffd" in sender.display_name
    assert sender.problem == decoded.problem
    labels = decode_labels(f"{word},Inbox")
    assert labels.names[1:] == ("Inbox",) and _storable(labels.names[0])
    assert labels.problem is not None and labels.problem.endswith(SURROGATE_NOTE)


# Encoded-words of the codecs that produce surrogates, with encoded-text of every byte, among arbitrary
# characters that include lone surrogates themselves (as a JSON `\ud800` escape delivers them).
_any_char = st.characters(min_codepoint=0, max_codepoint=0xFFFF)
_word = st.builds(
    lambda charset, encoding, raw: f"=?{charset}?{encoding}?{_encoded(encoding, raw)}?=",
    st.sampled_from(CHARSETS),
    st.sampled_from("BQbq"),
    st.binary(max_size=12),
)
_text = st.lists(st.one_of(_word, st.text(_any_char, max_size=8), st.sampled_from([" ", "<a@b.c>", ","]))).map("".join)


def _encoded(encoding: str, raw: bytes) -> str:
    if encoding in "bB":
        return base64.b64encode(raw).decode()
    return "".join(f"={byte:02X}" for byte in raw)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_every_text_decoder_output_survives_utf8(value: str) -> None:
    assert _storable(decode_words(value).text)
    assert _storable(decode_rfc2047(value))
    sender = parse_sender(value)
    assert _storable(sender.key) and _storable(sender.display_name) and _storable(sender.problem or "")
    assert all(_storable(name) for name in decode_labels(value).names)
    assert _storable(label_facts(value).joined)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["From", "Message-ID", "List-Unsubscribe", "Date", "X"]), _text), max_size=5))
def test_every_scan_record_survives_utf8(headers: list[tuple[str, str]]) -> None:
    meta = MessageMeta("18c6", ("INBOX", "\ud800x"), 10, 1_600_000_000_000, tuple(headers))
    warnings: list[str] = []
    record = metadata_record(meta, now=2e9, warnings=warnings)
    assert all(_storable(value) for value in record if isinstance(value, str))
    assert all(_storable(text) for text in warnings)
    assert any(SURROGATE_NOTE in text for text in warnings)  # the label always held one


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_word.map(str.encode), st.binary(max_size=20)), max_size=8).map(b"".join))
def test_every_import_record_survives_utf8(noise: bytes) -> None:
    block = b"From: " + noise + b" <a@b.c>\nX-Gmail-Labels: " + noise + b"\nMessage-ID: <" + noise + b">\n"
    assert all(_storable(v) for v in parse_header_block(block) if isinstance(v, str))
    region = Region(0, len(block), Postmark(b"1@xxx", b"From 1@xxx Fri Dec 04 20:33:24 +0000 2020"), block)
    warnings: list[str] = []
    verdict = judge_region(region, include_spam_trash=True, warnings=warnings, now=2e9)
    if isinstance(verdict, MailRecord):
        assert all(_storable(value) for value in verdict if isinstance(value, str))
    assert all(_storable(text) for text in warnings)


def _record(n: int, *, sender: str | None = None, size_bytes: int = 100) -> MailRecord:
    return MailRecord(
        f"mid:{n}@x",
        f"{n}@x",
        None,
        sender or f"s{n % 7}@example.com",
        "S",
        1_600_000_000 + n,
        size_bytes,
        "",
        False,
        False,
    )


def test_a_batch_the_database_refuses_is_bisected_down_to_the_refused_records(migrated_engine: Engine) -> None:
    records = [_record(n) for n in range(1000)]
    records[17] = _record(17, sender="\ud800@evil.example")  # past every repair: the last line of defence
    records[600] = _record(600, size_bytes=2**70)  # no SQLite integer holds it
    with migrated_engine.begin() as conn:
        run_id = create_run(conn, source=Source.MBOX, pid=1, now=0.0)
        outcome, rejected = count_batch_guarded(conn, records, source=Source.MBOX, run_id=run_id)
    assert outcome.new == 998
    assert [(r.index, r.reason.split(":")[0]) for r in rejected] == [(17, "UnicodeEncodeError"), (600, "OverflowError")]
    with migrated_engine.connect() as conn:
        (stored,) = conn.exec_driver_sql("SELECT count(*) FROM seen_mails").one()
        (sent,) = conn.exec_driver_sql("SELECT sum(mails_sent) FROM senders").one()
    assert (stored, sent) == (998, 998)


def test_a_batch_refused_record_by_record_is_a_fault_not_a_skip(migrated_engine: Engine) -> None:
    records = [_record(n, size_bytes=2**70) for n in range(MAX_REJECTED + 5)]
    with migrated_engine.begin() as conn:
        run_id = create_run(conn, source=Source.MBOX, pid=1, now=0.0)
        with pytest.raises(OverflowError):
            count_batch_guarded(conn, records, source=Source.MBOX, run_id=run_id)


def _message(n: int, sender: str, *, labels: str = "Inbox") -> bytes:
    return (
        b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nX-Gmail-Labels: %s\nFrom: %s\nMessage-ID: <crafted%d@x>\n\n"
        b"body\n" % (10**18 + n, labels.encode(), sender.encode(), n)
    )


def test_crafted_words_in_one_file_import_completely_through_the_cli(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "crafted.mbox"
    parts = [_message(i, f"{word} <a@b.example>") for i, word in enumerate(CRAFTED_WORDS)]
    parts.append(_message(10, "=?utf-7?Q?+2AA-?="))  # no address: the key itself is repaired
    parts.append(_message(11, "Fine <fine@example.com>", labels="=?utf-7?Q?+2AA-?=,Unread"))
    parts.append(_message(12, "Spam <spam@example.com>", labels="=?punycode?Q?a-l75g?=,Spam"))
    path.write_bytes(b"".join(parts))
    result = run_cli("import", path, "--db", db_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert sender_counts(db_path) == {"a@b.example": 5, "\ufffd": 1, "fine@example.com": 1}
    assert query(db_path, "SELECT labels, unread FROM seen_mails WHERE mail_id = 'mid:crafted11@x'") == [
        ("\ufffd,Unread", 1)
    ]
    ((state, outcome, seen, excluded, count, tail),) = query(
        db_path,
        "SELECT state, outcome, messages_seen, messages_excluded, warnings_count, warnings_tail FROM ingest_runs",
    )
    assert (state, outcome, seen, excluded, count) == ("done", "complete", 8, 1, 8)
    assert sum(SURROGATE_NOTE in w for w in json.loads(tail)) == 8
    assert "8 warnings" in result.stderr


def test_crafted_words_in_the_gmail_scan_count_every_message(tmp_path: Path) -> None:
    with fake_google(tmp_path, 120) as g:
        box = g.google.mailbox
        targets = [i for i in box.order if not box.messages[i].excluded][: len(CRAFTED_WORDS) + 1]
        for gmail_id, word in zip(targets, [*CRAFTED_WORDS, "\ud800 JSON"], strict=True):
            message = box.messages[gmail_id]
            odd = {"From": f"{word} <a@b.example>", "Message-ID": f"<{gmail_id}\udc80@x>"}
            box.messages[gmail_id] = dataclasses.replace(
                message, headers=tuple((k, odd.get(k, v)) for k, v in message.headers)
            )
        result = g.scan()
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        counts = sender_counts(g.db)
        listed = len(box.listed(include_spam_trash=False))
        assert counts["a@b.example"] == len(targets) and sum(counts.values()) == listed
        run = runs(g.db)[-1]
        assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", listed)
        tail = json.loads(str(run["warnings_tail"]))
        assert sum(SURROGATE_NOTE in w for w in tail) == 2 * len(targets) - 1  # the JSON one: one warning
        with sqlite3.connect(g.db) as conn:
            ids = conn.execute("SELECT count(*) FROM seen_mails WHERE rfc_message_id LIKE '%\ufffd@x'").fetchone()
        conn.close()
        assert ids == (len(targets),)


def test_framing_reads_crafted_words_like_any_others() -> None:
    data = b"".join(_message(i, f"{w} <a@b.example>") for i, w in enumerate(CRAFTED_WORDS))
    assert len(list(iter_regions(io.BytesIO(data)))) == len(CRAFTED_WORDS)
