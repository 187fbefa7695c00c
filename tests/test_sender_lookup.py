"""Hidden senders found in the viewer's copy of the senders (`viewer.query.sender_lookup`) exactly as SQLite finds them.

A real file holding addresses that differ only in case, in Unicode, by a newline or a NUL, and senders without
dates; the copy is read with the viewer's own `build`, and every answer is compared with `viewer.query.hidden_queries`
(the SQL the viewer runs without the copy).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.viewer_support import seed
from viewer.query import hidden_queries
from viewer.query.database import Database
from viewer.query.sender_index import SenderIndex, build
from viewer.query.sender_lookup import _hash

# Stored as they are (no normalisation on the way in): what an old or hand-made file can hold.
ODD = [
    "a@x.example",
    "A@x.example",
    "é@x.example",
    "É@x.example",
    "a\n@x.example",
    "a\x00b@x.example",
    "",
    "ß@y.example",
    "Mailer Daemon",  # a sender with no address keeps its case
    "Mail\x00er",
]


def _rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i, address in enumerate([*ODD, *(f"u{i}@d{i % 9}.example" for i in range(150))]):
        dated = i % 7 != 3  # some senders have no dates at all
        first = 1_500_000_000 + i * 86_400 if dated else None
        last = None if first is None else first + (i % 5) * 3_000_000
        rows.append((address, f"N{i}", 1 + i % 4, first, last, 700 * (i + 1), i % 3, i % 2))
    return rows


ROWS = _rows()
ADDRESSES = [r[0] for r in ROWS]


def _domain(address: str) -> str:
    return address.rpartition("@")[2]


DOMAINS = sorted({_domain(a) for a in ADDRESSES} | {"none.example"})
# What a page can send: stored addresses, near misses, and a lone surrogate (it can never be stored).
ASKED = st.sets(st.one_of(st.sampled_from(ADDRESSES), st.sampled_from(["a@X.example", "b@x.example", "\udc80@x"])))


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    path = tmp_path_factory.mktemp("lookup") / "stats.db"
    seed(path, senders=ROWS, through_store=False)  # the store would fold the addresses' case
    with sqlite3.connect(path) as conn:  # and find their domains: here, what follows the last `@`
        conn.executemany("UPDATE senders SET domain = ? WHERE sender = ?", [(_domain(a), a) for a in ADDRESSES])
    conn.close()
    database = Database(path)
    yield database
    database.engine.dispose()
    database.fallback_engine.dispose()


@pytest.fixture(scope="module")
def index(database: Database) -> SenderIndex:
    with database.connect() as conn:
        return build(conn)


def test_the_file_holds_the_odd_addresses_and_their_domains(database: Database) -> None:
    with database.connect() as conn:
        stored = {h.sender: h.domain for h in hidden_queries.hidden_senders(conn, ADDRESSES)}
    assert stored == {a: _domain(a) for a in ADDRESSES}  # a NUL in an address too (`viewer.query.sql_lists`)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asked=ASKED)
def test_hidden_senders_are_what_sqlite_reads(database: Database, index: SenderIndex, asked: set[str]) -> None:
    with database.connect() as conn:
        expected = sorted(hidden_queries.hidden_senders(conn, asked), key=lambda h: h.id)
    found = index.hidden_senders(asked)
    assert found is not None
    assert sorted(found, key=lambda h: h.id) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hidden=st.sets(st.sampled_from(ADDRESSES)), domains=st.lists(st.sampled_from(DOMAINS), unique=True))
def test_first_and_last_mail_without_the_hidden_are_what_sqlite_reads(
    database: Database, index: SenderIndex, hidden: set[str], domains: list[str]
) -> None:
    with database.connect() as conn:
        ids = [h.id for h in hidden_queries.hidden_senders(conn, hidden)]
        expected = hidden_queries.seen_without(conn, domains, sorted(hidden))
    found = index.seen_without(domains, ids)
    assert found is not None
    # SQLite leaves out a domain with no sender left; both leave out one whose senders have no dates.
    assert found == {d: s for d, s in expected.items() if s != (None, None)}


@pytest.mark.parametrize("asked", ["A@x.example", "a@x.example", "Mail\x00er", ""])
def test_an_address_is_matched_by_its_bytes_whatever_the_hash(
    database: Database, index: SenderIndex, asked: str
) -> None:
    """Every sender given the hash of the one asked for: only the exact address is found."""
    assert index.lookup is not None
    colliding = dataclasses.replace(index.lookup, hashes=np.full(index.size, _hash(asked), dtype=np.uint64))
    same = dataclasses.replace(index, lookup=colliding)
    with database.connect() as conn:
        expected = hidden_queries.hidden_senders(conn, [asked])
    assert len(expected) == 1
    assert same.hidden_senders([asked, "a@X.example"]) == expected


def test_without_the_lookup_the_index_says_so(index: SenderIndex) -> None:
    bare = dataclasses.replace(index, lookup=None)
    assert bare.hidden_senders(["a@x.example"]) is None
    assert bare.seen_without(["x.example"], []) is None
