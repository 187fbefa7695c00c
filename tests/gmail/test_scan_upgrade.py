"""Databases of the original Rust gmail-stats: upgraded in place, then `scan --backfill-message-ids`, twice."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from tests.conftest import run_cli
from tests.fakes.takeout import write_takeout
from tests.support.processes import backfill_checked, kill_when
from tests.support.rollups import assert_rollups_exact
from tests.support.scan import double_counted_rust_database, fake_google, runs, rust_database, sender_counts


@pytest.mark.parametrize("version", [0, 1, 2])
def test_rust_era_files_are_rebuilt_with_ids_as_text_and_merged_senders(tmp_path: Path, version: int) -> None:
    db = tmp_path / "stats.db"
    rust_database(
        db,
        version=version,
        ids=[12345, "18c6abc"] if version == 0 else ["12345", "18c6abc"],
        senders=[("Alice <Alice@Example.com>", 3), ("alice@example.com", 2), ("bob@x.org", 1), ("", 4)],
        runs=version == 2,
    )
    engine = writer_engine(db)
    try:
        migrate(engine)
        assert migrate(engine) == []  # a second run is a no-op
        with engine.connect() as conn:
            assert schema_version(conn) == LATEST_VERSION
            ids = conn.exec_driver_sql(
                "SELECT mail_id, typeof(mail_id), gmail_id, source, counted FROM seen_mails"
            ).all()
            senders = conn.exec_driver_sql("SELECT sender, display_name, mails_sent FROM senders ORDER BY sender").all()
            tables = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        close_writer_keeping_sidecars(engine, db)
    assert all(
        kind == "text" and mail_id == gmail_id and source == "gmail_api" and counted == 1
        for mail_id, kind, gmail_id, source, counted in ids
    )
    assert "12345" in {row[0] for row in ids}
    assert [tuple(row) for row in senders] == [("", "", 4), ("alice@example.com", "Alice", 5), ("bob@x.org", "", 1)]
    assert ("legacy_ingest_runs" in tables) == (version == 2)
    assert {"seen_mails", "senders", "ingest_runs", "gmail_retry", "backfill_checked"} <= tables


def test_our_own_older_versions_are_not_mistaken_for_rust(tmp_path: Path) -> None:
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    try:
        with engine.begin() as conn:
            for step in MIGRATIONS[:3]:
                step.apply(conn)
            conn.exec_driver_sql("INSERT INTO senders (sender, mails_sent) VALUES ('a@news.b.co.uk', 7)")
            conn.exec_driver_sql("PRAGMA user_version = 3")
        assert [m.version for m in migrate(engine)] == list(range(4, LATEST_VERSION + 1))
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT mails_sent, domain FROM senders").one() == (7, "b.co.uk")
    finally:
        close_writer_keeping_sidecars(engine, db)


def test_upgrade_then_backfill_collapses_double_counts_exactly_once(tmp_path: Path) -> None:
    with fake_google(tmp_path, 600) as g:
        box = g.google.mailbox
        kept = [box.messages[i] for i in box.listed(include_spam_trash=False)[-300:]]
        gone = kept[-1]  # deleted before the backfill reached it (not among the imported ones)
        g.google.faults.deleted.add(gone.gmail_id)
        counts = Counter(message.header("From") or "" for message in kept)
        rust_database(g.db, version=2, ids=[m.gmail_id for m in kept], senders=list(counts.items()), runs=True)
        # An import of the same mail, postmarks not matching: only Message-IDs can tell the doubles apart.
        both = [m for m in kept[:120] if m.message_id is not None]
        mbox = tmp_path / "mail.mbox"
        write_takeout(mbox, [(m, False) for m in both])
        imported = run_cli("import", mbox, "--db", g.db)
        assert imported.returncode == 0, imported.stderr
        doubled = sender_counts(g.db)
        assert sum(doubled.values()) == len(kept) + len(both)

        first = g.scan("--backfill-message-ids")
        assert first.returncode == 0, first.stderr
        run = runs(g.db)[-1]
        assert (run["source"], run["state"]) == ("backfill", "done")
        assert run["messages_seen"] == len(kept)  # the deleted one is settled as 'gone', with a warning
        assert run["warnings_count"] == 1 and gone.gmail_id in str(run["warnings_tail"])
        expected: dict[str, int] = {}
        for message in kept:
            expected[message.sender_key] = expected.get(message.sender_key, 0) + 1
        assert sender_counts(g.db) == expected
        assert_rollups_exact(g.db)  # the collapse took the doubles off the months and domains too

        second = g.scan("--backfill-message-ids")
        assert second.returncode == 0, second.stderr
        assert runs(g.db)[-1]["messages_seen"] == 0
        assert sender_counts(g.db) == expected

        g.google.faults.deleted.clear()
        full = g.scan()  # no history id from the Rust era: a full listing, known ids not fetched again
        assert full.returncode == 0, full.stderr
        assert sender_counts(g.db) == box.expected_counts()
        with sqlite3.connect(g.db) as conn:
            filled = conn.execute(
                "SELECT count(*) FROM seen_mails WHERE source = 'gmail_api' AND sender != ''"
            ).fetchone()
        conn.close()
        assert filled[0] == len(box.listed(include_spam_trash=False)) - 1  # all but the one deleted during backfill


@pytest.mark.slow
def test_backfill_killed_midway_then_run_again_is_exact(tmp_path: Path) -> None:
    with fake_google(tmp_path, 1500, quota=500) as g:
        kept = double_counted_rust_database(g, tmp_path)
        process = g.popen("--backfill-message-ids", GMAIL_STATS_QUOTA_UNITS_PER_SEC="500")
        kill_when(process, lambda: backfill_checked(g.db) >= 300, timeout=90, what="part of the backfill")
        done_before = backfill_checked(g.db)
        assert done_before < len(kept)
        g.google.bucket = None
        again = g.scan("--backfill-message-ids")
        assert again.returncode == 0, again.stderr
        assert runs(g.db)[-1]["messages_seen"] == len(kept) - done_before
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
