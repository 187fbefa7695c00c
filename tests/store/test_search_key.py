"""`senders.search_key` (address, newline, name): written by the ingester with every sender, filled for older files.

Searches tested on every sender read only this key (`viewer.query.filter_match`), so a row whose key is stale would be
missed without a word: the real writer is checked through name changes, and a schema step 6 file through its
upgrade, keeping its ids (the trigram index refers to them).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migrations import LATEST_VERSION, MIGRATIONS, migrate
from shared.schema.models import Source
from tests.support.viewer import make_settings, records_for, viewer

DAY = 1_700_000_000


def _keys(db: Path) -> dict[str, tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return {
            row[0]: (row[1], row[2]) for row in conn.execute("SELECT sender, display_name, search_key FROM senders")
        }
    finally:
        conn.close()


def _ids_and_keys(db: Path) -> list[tuple[int, str]]:
    raw = sqlite3.connect(db)
    try:
        return raw.execute("SELECT id, search_key FROM senders ORDER BY id").fetchall()
    finally:
        raw.close()


def test_the_store_writes_the_key_and_follows_the_name(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    migrate(engine)
    a, b, c = "a@x.test", "b@x.test", "c@x.test"
    batches = [
        [(a, "", 1, DAY, DAY, 10, 0, 0), (b, "Old", 1, DAY + 100, DAY + 100, 10, 0, 0)],
        # a gains a name; b's newer message renames it; c is new
        [
            (a, "Named", 1, DAY + 50, DAY + 50, 10, 0, 0),
            (b, "New", 1, DAY + 200, DAY + 200, 10, 0, 0),
            (c, "C", 1, DAY, DAY, 1, 0, 0),
        ],
        # an older message of b's (its old name) and a later one of c's without a name change nothing
        [(b, "Older", 1, DAY + 150, DAY + 150, 10, 0, 0), (c, "", 1, DAY + 20, DAY + 20, 10, 0, 0)],
    ]
    names = [{a: "", b: "Old"}, {a: "Named", b: "New", c: "C"}, {a: "Named", b: "New", c: "C"}]
    for n, (batch, expected) in enumerate(zip(batches, names, strict=True)):
        with engine.begin() as conn:
            records = [
                r._replace(mail_id=f"{n}:{r.mail_id}", rfc_message_id=f"{n}.{r.rfc_message_id}")
                for r in records_for(batch)
            ]
            count_batch(conn, records, source=Source.MBOX, run_id=1)
        assert _keys(db) == {s: (name, f"{s}\n{name}") for s, name in expected.items()}
    close_writer_keeping_sidecars(engine, db)


def test_an_older_file_gets_every_key_and_keeps_its_ids(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    with engine.begin() as conn:
        for step in MIGRATIONS:
            if step.version <= 6:
                step.apply(conn)
        conn.exec_driver_sql("PRAGMA user_version = 6")
        conn.exec_driver_sql(
            "INSERT INTO senders (id, sender, display_name, mails_sent, domain) VALUES"
            " (7, 'news@a.test', 'Daily News', 3, 'a.test'), (9, 'bob@b.test', '', 2, 'b.test'),"
            " (12, 'q@c.test', 'Quiet', 1, 'c.test')"
        )
        conn.exec_driver_sql("INSERT INTO domains SELECT domain, 1, mails_sent, 0, 0, 0, NULL, NULL FROM senders")
        conn.exec_driver_sql("INSERT INTO sender_search (sender_search) VALUES ('rebuild')")
    assert [m.version for m in migrate(engine)] == list(range(7, LATEST_VERSION + 1))
    close_writer_keeping_sidecars(engine, db)
    assert _ids_and_keys(db) == [(7, "news@a.test\nDaily News"), (9, "bob@b.test\n"), (12, "q@c.test\nQuiet")]
    with viewer(make_settings(tmp_path)) as client:
        for q, expected in (
            ("q", ["q@c.test"]),
            ("ws", ["news@a.test"]),
            ("news", ["news@a.test"]),
            ("B", ["bob@b.test"]),
        ):
            body = client.get("/api/senders", params={"q": q}).json()
            assert [s["sender"] for s in body["senders"]] == expected, q
