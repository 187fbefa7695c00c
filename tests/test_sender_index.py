"""The viewer's in-memory sender index: a search means what SQLite's `LIKE` means, and the index is used only for
the version of the file it was read from.

The search is checked against SQLite itself (a real in-memory database asked `LIKE` with the viewer's escaping)
on arbitrary keys, through each of the index's three ways to find a text. The keeper is driven on real files: a
file written moments ago is not read, a write during the read discards the copy, a failed read is logged and SQL
answers. Whole pages and counts through the API, both ways, are in `test_filter_match.py`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Connection

from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.models import Source
from tests.viewer_support import SENDERS, records_for, seed, settle
from viewer.query.database import Database
from viewer.query.filters import SenderFilter
from viewer.query.index_keeper import IndexKeeper
from viewer.query.sender_index import SenderIndex, build, from_rows
from viewer.query.sender_queries import SortKey

# Letters in both cases, the characters `LIKE` treats specially, and ones whose case only Unicode folds
# (É/é, KELVIN SIGN, LONG S, sharp s), a NUL (`LIKE` reads a text up to it) and a newline (address | name).
ALPHABET = "aAbBkKsS1@._%\\ Éé\u212a\u017fß\x00\n"
KEYS = st.lists(st.text(alphabet=ALPHABET, max_size=12), max_size=25)
NEEDLES = st.text(alphabet=ALPHABET.replace("\x00", "").replace("\n", ""), min_size=1, max_size=4)


def _index(keys: list[str]) -> SenderIndex:
    rows = [(i + 1, 1 + i % 3, 0.0, False, "d.example", key) for i, key in enumerate(keys)]
    ids = [row[0] for row in rows]
    return from_rows([rows], dict.fromkeys(SortKey, ids))


def _like(keys: list[str], needle: str) -> list[bool]:
    """SQLite's own answer, with the escaping `viewer.query.sender_queries.key_like` uses."""
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with sqlite3.connect(":memory:") as conn:
        return [bool(conn.execute("SELECT ? LIKE ? ESCAPE '\\'", (key, pattern)).fetchone()[0]) for key in keys]


@given(keys=KEYS, needle=NEEDLES)
def test_a_search_means_what_like_means(keys: list[str], needle: str) -> None:
    if not SenderIndex.covers(SenderFilter(q=needle)):
        return  # a longer non-ASCII search keeps the trigram index's folding (SQL answers it)
    index = _index(keys)
    expected = _like(keys, needle)
    matched = index.select(SenderFilter(q=needle), hidden_ids=[])
    assert matched.mask.tolist() == expected
    assert (matched.total, matched.messages) == (sum(expected), sum(1 + i % 3 for i, e in enumerate(expected) if e))
    folded = needle.encode().lower()
    if len(folded) <= len(index.chars):  # the two scans of the whole text, which many matches take
        assert index._compared(folded).tolist() == expected
        assert index._anchored(folded).tolist() == expected


def test_a_search_the_index_does_not_fold_like_sql_is_left_to_sql() -> None:
    assert SenderIndex.covers(SenderFilter(q="ÉL"))  # two characters: `LIKE` decides in SQL too
    assert not SenderIndex.covers(SenderFilter(q="élo"))  # the trigram index's Unicode folding
    assert not SenderIndex.covers(SenderFilter(q="a\nb"))  # tested on the address and the name apart


def test_hidden_senders_and_unknown_ids_leave_the_match() -> None:
    index = _index(["aa", "ab", "ba", "bb"])
    matched = index.select(SenderFilter(q="a"), hidden_ids=[2, 99, 0])
    assert (matched.total, matched.mask.tolist()) == (2, [True, False, True, False])


@pytest.fixture
def database(tmp_path: Path) -> Database:
    seed(tmp_path / "stats.db")
    return Database(tmp_path / "stats.db")


def _keeper(database: Database, **kwargs: object) -> IndexKeeper:
    options: dict[str, object] = {"build": build, **kwargs}
    return IndexKeeper(
        change_key=database.change_key,
        connect=database.connect,
        is_ready=database.schema_ready,
        **options,  # type: ignore[arg-type]
    )


def test_a_file_written_moments_ago_is_not_read_until_it_settles(database: Database) -> None:
    keeper = _keeper(database)
    assert keeper.get() is None
    assert not keeper.built.wait(0.3)  # no read started: an ingester may still be writing
    settle(database.path)
    assert keeper.get() is None  # the read starts now
    assert keeper.built.wait(30)
    kept = keeper.get()
    assert kept is not None and kept.index.size == len(SENDERS)
    assert not _keeper(database, enabled=False).get()


def test_a_write_during_the_read_discards_the_copy(database: Database) -> None:
    writes = 0

    def build_while_writing(conn: Connection) -> SenderIndex:
        nonlocal writes
        writes += 1
        engine = writer_engine(database.path)
        with engine.begin() as writer:
            count_batch(
                writer, list(records_for([("late@x.example", "", 1, 1, 1, 1, 0, 0)])), source=Source.MBOX, run_id=1
            )
        close_writer_keeping_sidecars(engine, database.path)
        return build(conn)

    settle(database.path)
    keeper = _keeper(database, build=build_while_writing)
    keeper.get()
    assert keeper.built.wait(30)
    assert (keeper.get(), writes) == (None, 1)  # discarded, and not read again before the file settles


def test_a_failed_read_is_logged_and_sql_answers(database: Database, caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    def broken(conn: Connection) -> SenderIndex:
        nonlocal calls
        calls += 1
        raise sqlite3.DatabaseError("database disk image is malformed")

    settle(database.path)
    keeper = _keeper(database, build=broken)
    with caplog.at_level(logging.ERROR, logger="viewer"):
        keeper.get()
        assert keeper.built.wait(30)
    assert "filters are counted by SQLite instead" in caplog.text
    assert keeper.get() is None
    assert (keeper.built.is_set(), calls) == (True, 1)  # not read again for the same version of the file


def test_a_closed_keeper_waits_for_its_read_and_keeps_nothing(database: Database) -> None:
    """The app closes the keeper before it closes the database's engines: a read under way finishes first."""
    release = threading.Event()

    def slow(conn: Connection) -> SenderIndex:
        release.wait(30)
        return build(conn)

    settle(database.path)
    keeper = _keeper(database, build=slow)
    keeper.get()
    threading.Timer(0.2, release.set).start()
    keeper.close()
    assert keeper.built.is_set()
    assert keeper.get() is None
