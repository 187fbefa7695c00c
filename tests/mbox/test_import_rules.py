"""Takeout rules 4-7 and re-import exactness, through the real importer on real files and databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from shared.db import writer_engine
from shared.schema.models import RunOutcome, RunState
from tests.support.importing import counts_of, import_file, query, senders_of

SEP = b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020\n"
SEP2 = b"From 1785392015443392564@xxx Sat Dec 05 20:33:24 +0000 2020\n"
SEP_PLAIN = b"From MAILER-DAEMON Thu Jan  1 00:00:00 2020\n"


def sep(n: int) -> bytes:
    """A Takeout separator carrying Gmail id `n` (decimal, as Takeout writes it)."""
    return b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\n" % n


def write(tmp_path: Path, *messages: bytes) -> Path:
    path = tmp_path / "takeout.mbox"
    path.write_bytes(b"".join(messages))
    return path


def test_sender_fallbacks_and_no_sender(tmp_path: Path, db_path: Path) -> None:
    path = write(
        tmp_path,
        sep(1) + b"From: \nSender: Real <Real@Example.com>\nReturn-Path: <rp@x>\n\nx\n",
        sep(2) + b"Return-Path: <RP@x.org>\n\nx\n",
        sep(3) + b"Subject: nobody\n\nx\n",
        sep(4) + b"From: Mail Delivery   Subsystem\n\nx\n",
    )
    import_file(db_path, path)
    assert counts_of(db_path) == {"real@example.com": 1, "rp@x.org": 1, "": 1, "Mail Delivery Subsystem": 1}


def test_message_id_dedupes_and_header_hash_keys_messages_without_one(tmp_path: Path, db_path: Path) -> None:
    path = write(
        tmp_path,
        SEP_PLAIN + b"From: a@x\nMessage-ID: <same@x>\n\nx\n",
        SEP_PLAIN + b"From: a@x\nMessage-ID:  same@x \n\ncopy\n",
        SEP_PLAIN + b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:24 +0000\n\nno id one\n",
        SEP_PLAIN + b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:25 +0000\n\nno id two\n",
        SEP_PLAIN + b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:25 +0000\n\nsame headers, another body\n",
        SEP_PLAIN + b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:25 +0000\n\nsame headers, another body\n",
    )
    first = import_file(db_path, path)
    assert (first.messages_seen, first.messages_new) == (6, 4)  # the last one is the one before, again
    again = import_file(db_path, path)
    assert (again.messages_seen, again.messages_new) == (6, 0)
    assert counts_of(db_path) == {"a@x": 4}
    ids = sorted(row[0][:4] for row in query(db_path, "SELECT mail_id FROM seen_mails"))
    assert ids == ["hdb:", "hdb:", "hdb:", "mid:"]


def test_header_hash_keys_of_older_imports_keep_deduplicating(tmp_path: Path, db_path: Path) -> None:
    """An older import keyed id-less messages by their headers alone and merged two with the same headers: a
    re-import adds exactly the one it merged, and the next adds nothing."""
    headers = b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:25 +0000\n\n"
    path = write(tmp_path, SEP_PLAIN + headers + b"one\n", SEP_PLAIN + headers + b"two\n")
    import_file(db_path, path)
    with sqlite3.connect(db_path) as conn:  # as an older version stored them: one `hdr:` row, one message
        conn.execute("DELETE FROM seen_mails WHERE rowid = (SELECT max(rowid) FROM seen_mails)")
        conn.execute("UPDATE seen_mails SET mail_id = 'hdr:' || substr(mail_id, 5, 64)")
        conn.execute("UPDATE senders SET mails_sent = 1")
    conn.close()
    assert query(db_path, "SELECT substr(mail_id, 1, 4) FROM seen_mails") == [("hdr:",)]
    assert import_file(db_path, path).messages_new == 1
    assert counts_of(db_path) == {"a@x": 2}
    assert import_file(db_path, path).messages_new == 0
    assert counts_of(db_path) == {"a@x": 2}


def test_takeout_messages_without_message_id_are_keyed_by_their_gmail_id(tmp_path: Path, db_path: Path) -> None:
    same_headers = b"From: a@x\nDate: Fri, 04 Dec 2020 20:33:24 +0000\n\n"
    path = write(
        tmp_path,
        sep(10**18 + 1) + same_headers + b"one\n",
        sep(10**18 + 2) + same_headers + b"two: identical headers, another message\n",
        sep(10**18 + 2) + same_headers + b"the same Gmail id again: the same message\n",
        sep(10**18 + 3) + b"From: a@x\nMessage-ID: <m@x>\n\nwith an id\n",
    )
    first = import_file(db_path, path)
    assert (first.messages_seen, first.messages_new) == (4, 3)
    again = import_file(db_path, path)
    assert (again.messages_seen, again.messages_new) == (4, 0)
    keys = sorted(row[0] for row in query(db_path, "SELECT mail_id FROM seen_mails"))
    assert keys == ["gid:" + format(10**18 + 1, "x"), "gid:" + format(10**18 + 2, "x"), "mid:m@x"]


def test_reimport_after_upgrade_adds_nothing_to_header_hash_keys(tmp_path: Path, db_path: Path) -> None:
    """A database filled before `gid:` keys holds `hdr:` rows for the same messages: they must still match."""
    path = write(tmp_path, sep(10**18 + 5) + b"From: a@x\n\nbody\n", sep(10**18 + 6) + b"From: b@x\n\nbody\n")
    import_file(db_path, path)
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE seen_mails SET mail_id = 'hdr:' || gmail_id")  # as an older version stored it
    engine.dispose()
    again = import_file(db_path, path)
    assert (again.messages_seen, again.messages_new) == (2, 0)
    assert counts_of(db_path) == {"a@x": 1, "b@x": 1}


def test_spam_trash_chat_excluded_unless_asked(
    tmp_path: Path, db_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = write(
        tmp_path,
        SEP + b"From: s@x\nMessage-ID: <1@x>\nX-Gmail-Labels: Spam\n\nx\n",
        SEP + b"From: t@x\nMessage-ID: <2@x>\nX-Gmail-Labels: Inbox,Trash\n\nx\n",
        SEP + b"From: c@x\nMessage-ID: <3@x>\nX-Gmail-Labels: Chat\n\nx\n",
        SEP + b"From: i@x\nMessage-ID: <4@x>\nX-Gmail-Labels: =?UTF-8?Q?Inbox,Unread?=\n\nx\n",
    )
    result = import_file(db_path, path)
    assert (result.messages_seen, result.messages_new, result.messages_excluded) == (4, 1, 3)
    assert counts_of(db_path) == {"i@x": 1}
    other = tmp_path_factory.mktemp("with-spam") / "stats.db"
    import_file(other, path, include_spam_trash=True)
    assert counts_of(other) == {"s@x": 1, "t@x": 1, "i@x": 1}


def test_stored_metadata(tmp_path: Path, db_path: Path) -> None:
    one = SEP + b"From: Old Name <a@x>\nDate: Thu, 03 Dec 2020 10:00:00 +0000\nX-Gmail-Labels: Inbox,Unread\n\nx\n"
    two = SEP2 + b"From: New Name <a@x>\nDate: bogus\nList-Unsubscribe: <mailto:u@x>\nMessage-ID: <2@x>\n\nbody\n"
    three = SEP_PLAIN + b"From: a@x\nDate: Sat, 01 Jan 2000 00:00:00 +0000\nMessage-ID: <3@x>\n\n"
    path = write(tmp_path, one, two, three)
    result = import_file(db_path, path)
    assert result.outcome == RunOutcome.COMPLETE
    assert senders_of(db_path)["a@x"] == {
        "sender": "a@x",
        "display_name": "New Name",  # latest non-empty: `two` is dated by its postmark, 2020-12-05
        "mails_sent": 3,
        "first_seen_unix": 946684800,
        "last_seen_unix": 1607200404,
        "bytes": len(one) + len(two) + len(three),
        "unread": 1,
        "list_unsubscribe": 1,
    }
    rows = query(db_path, "SELECT gmail_id, date_unix, size_bytes, labels, unread FROM seen_mails ORDER BY id")
    assert rows == [
        ("18c6fc9421527833", 1606989600, len(one), "Inbox,Unread", 1),
        ("18c6fc9421527834", 1607200404, len(two), "", 0),
        (None, 946684800, len(three), "", 0),
    ]
    assert query(db_path, "SELECT typeof(mail_id), typeof(gmail_id), typeof(sender) FROM seen_mails LIMIT 1") == [
        ("text", "text", "text")
    ]


def test_never_stores_subjects_or_bodies(tmp_path: Path, db_path: Path) -> None:
    path = write(tmp_path, SEP + b"From: a@x\nSubject: SECRET-SUBJECT\nTo: victim@x\n\nSECRET-BODY\n")
    import_file(db_path, path)
    content = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("stats.db"))
    assert b"SECRET-SUBJECT" not in content
    assert b"SECRET-BODY" not in content
    assert b"victim@x" not in content


def test_undecodable_bytes_never_drop_a_message(tmp_path: Path, db_path: Path) -> None:
    path = write(
        tmp_path,
        SEP + b"From: \xff\xfe\x80 <bin@x>\nMessage-ID: <\xe9t\xe9@x>\n\n\x00\x01\xff\n",
        SEP + b"From: =?bogus-charset?Q?=FF?= <q@x>\n\nx\n",
    )
    result = import_file(db_path, path)
    assert result.messages_new == 2
    assert set(counts_of(db_path)) == {"bin@x", "q@x"}


def test_skipped_regions_make_the_run_partial(tmp_path: Path, db_path: Path) -> None:
    path = write(
        tmp_path,
        b"garbage before the first separator\n",
        SEP + b"no header line here\n\nbody\n",
        SEP + b"From: a@x\n\nx\n",
    )
    result = import_file(db_path, path)
    assert (result.messages_skipped, result.messages_new) == (2, 1)
    assert (result.state, result.outcome) == (RunState.DONE, RunOutcome.PARTIAL)
    ((count, tail),) = query(db_path, "SELECT warnings_count, warnings_tail FROM ingest_runs")
    assert count == 2
    assert "skipped bytes 0-35" in tail


@pytest.mark.parametrize("crlf", [False, True])
def test_generated_mailbox_counts_exactly(tmp_path: Path, db_path: Path, crlf: bool) -> None:
    from tests.support.factories import generate_messages, write_mbox

    messages = list(generate_messages(count=600, body_bytes=300, senders=40, spam_every=9))
    if crlf:
        messages = [
            m.__class__(m.sender, m.message_id, m.date_unix, m.labels, m.raw.replace(b"\n", b"\r\n")) for m in messages
        ]
    path = tmp_path / "gen.mbox"
    expected = write_mbox(path, messages)
    result = import_file(db_path, path)
    assert counts_of(db_path) == expected
    assert result.messages_excluded == 600 // 9
