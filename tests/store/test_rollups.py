"""What the ingesters keep per sender beyond counts: domain, unsubscribe targets, months, and exact rollups."""

from __future__ import annotations

import email.utils
from pathlib import Path

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migrations import LATEST_VERSION, MIGRATIONS, migrate
from tests.support.factories import postmark
from tests.support.importing import import_file, query
from tests.support.rollups import assert_rollups_exact
from tests.support.scan import fake_google

JAN = 1_704_067_200  # 2024-01-01T00:00:00Z
FEB = 1_706_745_600  # 2024-02-01T00:00:00Z


def _message(index: int, sender: str, date: int | None, *extra: str, size_pad: int = 0) -> bytes:
    headers = [f"From: Name {index} <{sender}>", f"Message-ID: <{index}@t>", *extra]
    if date is not None:
        headers.append(f"Date: {email.utils.formatdate(date)}")
    text = "\n".join(headers) + "\n\n" + "x" * size_pad + "\n"
    return postmark(10**17 + index, date if date is not None else JAN) + text.encode()


def test_import_keeps_domain_latest_unsubscribe_and_months(tmp_path: Path) -> None:
    mbox = tmp_path / "mail.mbox"
    one_click = "List-Unsubscribe-Post: List-Unsubscribe=One-Click"
    messages = [
        # The newest message's targets win, whatever the file order.
        _message(1, "news@mail.shop.co.uk", FEB + 10, "List-Unsubscribe: <https://shop.co.uk/u/2>", one_click),
        _message(2, "news@mail.shop.co.uk", JAN + 10, "List-Unsubscribe: <mailto:u@shop.co.uk>, <https://x.y/1>"),
        # A later message without the header keeps the older target.
        _message(3, "news@mail.shop.co.uk", FEB + 20),
        _message(4, "deals@shop.co.uk", JAN + 5, "List-Unsubscribe: <javascript:alert(1)>"),
        _message(5, "friend@example.org", None),
        _message(6, "friend@example.org", JAN + 99),
    ]
    mbox.write_bytes(b"".join(messages))
    db = tmp_path / "stats.db"
    import_file(db, mbox)
    assert query(
        db,
        "SELECT sender, domain, mails_sent, list_unsubscribe, unsubscribe_web, unsubscribe_mailto, unsubscribe_unix,"
        " one_click FROM senders ORDER BY sender",
    ) == [
        ("deals@shop.co.uk", "shop.co.uk", 1, 1, None, None, None, 0),
        ("friend@example.org", "example.org", 2, 0, None, None, None, 0),
        ("news@mail.shop.co.uk", "shop.co.uk", 3, 2, "https://shop.co.uk/u/2", None, FEB + 10, 1),
    ]
    sizes = dict(query(db, "SELECT mail_id, size_bytes FROM seen_mails"))
    assert query(db, "SELECT sender, month, messages, bytes FROM sender_months ORDER BY 1, 2") == [
        ("deals@shop.co.uk", "2024-01", 1, sizes["mid:4@t"]),
        # Without a Date header, the Takeout postmark's date stands in.
        ("friend@example.org", "2024-01", 2, sizes["mid:5@t"] + sizes["mid:6@t"]),
        ("news@mail.shop.co.uk", "2024-01", 1, sizes["mid:2@t"]),
        ("news@mail.shop.co.uk", "2024-02", 2, sizes["mid:1@t"] + sizes["mid:3@t"]),
    ]
    assert query(db, "SELECT domain, senders, mails_sent FROM domains ORDER BY 1") == [
        ("example.org", 1, 2),
        ("shop.co.uk", 2, 4),
    ]
    assert_rollups_exact(db)


def test_scan_keeps_the_same_data(tmp_path: Path) -> None:
    with fake_google(tmp_path, 300) as g:
        result = g.scan()
        assert result.returncode == 0, result.stderr
        # The targets of the sender's newest message carrying the header (any of them when dates tie).
        newest: dict[str, tuple[int, set[tuple[str | None, str, int]]]] = {}
        for message in g.google.mailbox.messages.values():
            value = message.header("List-Unsubscribe")
            if message.excluded or value is None:
                continue
            web = value[1 : value.index(">")] if value.startswith("<https") else None
            target = (web, value[value.index("<mailto:") + 1 : -1], int(web is not None))
            date, targets = newest.get(message.sender_key, (-1, set()))
            if message.internal_date_ms > date:
                newest[message.sender_key] = (message.internal_date_ms, {target})
            elif message.internal_date_ms == date:
                targets.add(target)
        kept = query(
            g.db,
            "SELECT sender, unsubscribe_web, unsubscribe_mailto, one_click FROM senders WHERE list_unsubscribe > 0",
        )
        assert {row[0] for row in kept} == set(newest)
        for sender, web, mailto, one_click in kept:
            assert (web, mailto, one_click) in newest[sender][1], sender
        assert {one for _, web, _, one in kept} == {0, 1}
        total = query(g.db, "SELECT sum(mails_sent) FROM senders")[0][0]
        assert query(g.db, "SELECT sum(messages) FROM months")[0][0] == total  # every scanned message is dated
        assert_rollups_exact(g.db)


def test_a_version_4_database_is_backfilled(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    with engine.begin() as conn:
        for step in MIGRATIONS[:4]:
            step.apply(conn)
        conn.exec_driver_sql("PRAGMA user_version = 4")
        conn.exec_driver_sql(
            "INSERT INTO seen_mails (mail_id, sender, date_unix, size_bytes, source, run_id, counted) VALUES"
            f" ('a', 'x@news.a.com', {JAN}, 10, 'mbox', 1, 1), ('b', 'x@news.a.com', {FEB}, 20, 'mbox', 1, 1),"
            f" ('c', 'y@a.com', {FEB}, 40, 'mbox', 1, 1), ('d', 'y@a.com', {FEB}, 80, 'mbox', 1, 0),"
            f" ('e', 'y@a.com', NULL, 160, 'mbox', 1, 1), ('f', 'z@b.org', {JAN}, 1, 'gmail_api', NULL, 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO senders (sender, display_name, mails_sent, bytes, unread, list_unsubscribe) VALUES"
            " ('x@news.a.com', 'Ex', 2, 30, 1, 2), ('y@a.com', 'Why', 2, 200, 0, 0), ('z@b.org', '', 1, 1, 0, 0)"
        )
    assert [m.version for m in migrate(engine)] == list(range(5, LATEST_VERSION + 1))
    close_writer_keeping_sidecars(engine, db)
    assert query(db, "SELECT sender, domain, mails_sent, bytes, unread, display_name FROM senders ORDER BY 1") == [
        ("x@news.a.com", "a.com", 2, 30, 1, "Ex"),
        ("y@a.com", "a.com", 2, 200, 0, "Why"),
        ("z@b.org", "b.org", 1, 1, 0, ""),
    ]
    # Counted, dated rows only; the Rust-era row (no run) and the uncounted one stay out.
    assert query(db, "SELECT sender, month, messages, bytes FROM sender_months ORDER BY 1, 2") == [
        ("x@news.a.com", "2024-01", 1, 10),
        ("x@news.a.com", "2024-02", 1, 20),
        ("y@a.com", "2024-02", 1, 40),
    ]
    assert query(db, "SELECT * FROM domains ORDER BY 1") == [
        ("a.com", 2, 4, 230, 1, 2, None, None),
        ("b.org", 1, 1, 1, 0, 0, None, None),
    ]
    assert query(db, "SELECT * FROM months ORDER BY 1") == [("2024-01", 1, 10), ("2024-02", 2, 60)]
    assert query(db, "SELECT sender FROM sender_search WHERE sender_search MATCH '\"why\"'") == [("y@a.com",)]
    assert_rollups_exact(db)
