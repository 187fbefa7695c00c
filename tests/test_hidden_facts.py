"""The hidden senders' facts a viewer keeps per set (`viewer.query.hidden_facts`), against SQLite's own sums.

A real file written by the ingester's store; each set in a sequence of Hide clicks and undos (what the page
sends) is answered from the nearest set already known, and must equal plain SQL over the whole set, every time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.models import Source
from tests.viewer_support import records_for, seed
from viewer.query.database import Database
from viewer.query.hidden_facts import HiddenFacts, HiddenSet

YEAR = 31_557_600


def _rows() -> list[tuple[Any, ...]]:
    """120 senders over 12 domains, one to five messages each, their first and last mail years apart (two months
    each; one sender undated)."""
    rows: list[tuple[Any, ...]] = []
    for i in range(120):
        count = 1 + i % 5
        first = None if i == 7 else 1_500_000_000 + (i % 9) * 2_600_000
        last = None if first is None else first + (i % 4) * YEAR
        rows.append((f"u{i}@d{i % 12}.example", f"U {i}", count, first, last, 1000 * count + i, i % 3, i % 2))
    return rows


ROWS = _rows()
NAMES = [r[0] for r in ROWS] + ["nobody@d1.example", "ghost@nowhere.example"]  # two that are no sender


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("facts") / "stats.db"
    seed(path, senders=ROWS)
    return path


def _oracle(path: Path, members: set[str]) -> dict[str, Any]:
    """What the pages subtract, in plain SQL over the whole set."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        listed = json.dumps(sorted(members))
        inside = "sender IN (SELECT value FROM json_each(?))"
        rows = conn.execute(f"SELECT sender, id, domain, mails_sent FROM senders WHERE {inside}", (listed,)).fetchall()
        by_domain = conn.execute(
            "SELECT domain, count(*), sum(mails_sent), sum(bytes), sum(unread), sum(list_unsubscribe)"
            f" FROM senders WHERE {inside} GROUP BY domain",
            (listed,),
        ).fetchall()
        months = conn.execute(
            f"SELECT month, sum(messages), sum(bytes) FROM sender_months WHERE {inside} GROUP BY month", (listed,)
        ).fetchall()
        seen = conn.execute(
            f"SELECT domain, min(first_seen_unix), max(last_seen_unix) FROM senders WHERE NOT {inside} GROUP BY domain",
            (listed,),
        ).fetchall()
    return {
        "senders": len(rows),
        "messages": sum(r[3] for r in rows),
        "ids": sorted(r[1] for r in rows),
        "by_domain": {r[0]: tuple(r[1:]) for r in by_domain},
        "months": {r[0]: (r[1], r[2]) for r in months if r[1] or r[2]},
        "seen": {r[0]: (r[1], r[2]) for r in seen},
    }


def _answer(facts: HiddenFacts, database: Database, members: set[str]) -> dict[str, Any]:
    exclude = tuple(sorted(members))
    version = database.change_key()
    with database.connect() as conn:
        hidden: HiddenSet = facts.hidden_set(conn, version, exclude)
        domains = sorted({r[0].split("@")[1] for r in ROWS})
        seen = facts.seen_without(conn, version, hidden)(domains)
        months = facts.months(conn, version, exclude)
    return {
        "senders": hidden.senders,
        "messages": hidden.messages,
        "ids": sorted(hidden.ids),
        "by_domain": hidden.by_domain,
        "months": months,
        # A domain whose every sender is hidden has no first or last mail left.
        "seen": {d: s for d, s in seen.items() if d not in hidden.by_domain or s != (None, None)},
    }


@pytest.fixture
def database(db_path: Path) -> Iterator[Database]:
    database = Database(db_path)
    yield database
    database.engine.dispose()
    database.fallback_engine.dispose()


# A page's session: each step hides one sender, un-hides one (undo), or replaces the whole set.
_step = st.one_of(
    st.tuples(st.just("hide"), st.sampled_from(NAMES)),
    st.tuples(st.just("undo"), st.integers(min_value=0, max_value=1000)),
    st.tuples(st.just("new"), st.sets(st.sampled_from(NAMES), max_size=40)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.sets(st.sampled_from(NAMES), max_size=60), steps=st.lists(_step, min_size=1, max_size=12))
def test_every_set_of_a_session_equals_sqlite_over_the_whole_set(
    db_path: Path, database: Database, start: set[str], steps: list[tuple[str, Any]]
) -> None:
    facts = HiddenFacts()
    members = set(start)
    assert _answer(facts, database, members) == _oracle(db_path, members)
    for kind, value in steps:
        if kind == "hide":
            members = members | {value}
        elif kind == "undo" and members:
            members = members - {sorted(members)[value % len(members)]}
        elif kind == "new":
            members = set(value)
        assert _answer(facts, database, members) == _oracle(db_path, members)
        assert _answer(HiddenFacts(), database, members) == _oracle(db_path, members)  # cold, the same


def _lists_asked(database: Database) -> list[list[str]]:
    """Records the JSON lists of senders each statement binds (what SQLite is asked about)."""
    asked: list[list[str]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        for value in parameters if isinstance(parameters, tuple | list) else parameters.values():
            if isinstance(value, str) and value.startswith("["):
                asked.append(json.loads(value))

    event.listen(database.engine, "before_cursor_execute", record)
    return asked


def test_a_hide_click_asks_sqlite_about_one_sender_not_the_whole_set(database: Database) -> None:
    facts = HiddenFacts()
    members = [r[0] for r in ROWS[:50]]
    _answer(facts, database, set(members))
    asked = _lists_asked(database)

    def domain_lists(sender: str, hidden: set[str]) -> list[list[str]]:
        """The one domain whose other senders' first and last mail changed, and its hidden members."""
        domain = sender.split("@")[1]
        return [[domain], sorted(h for h in hidden if h.endswith("@" + domain))]

    clicked = ROWS[60][0]
    _answer(facts, database, {*members, clicked})  # Hide
    assert sorted(asked) == sorted([[clicked], [clicked], *domain_lists(clicked, {*members, clicked})])
    asked.clear()
    # Undo of another sender: two away from the last set, one from the first; nothing to look up but the months
    # of the one sender dropped, and its domain's first and last mail.
    _answer(facts, database, set(members[1:]))
    assert sorted(asked) == sorted([[members[0]], *domain_lists(members[0], set(members[1:]))])
    asked.clear()
    _answer(facts, database, set(members))  # known: nothing asked
    assert asked == []


def test_a_write_to_the_file_forgets_every_fact(db_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "stats.db"
    seed(path, senders=ROWS)
    database = Database(path)
    facts = HiddenFacts()
    hidden = {ROWS[0][0], ROWS[13][0]}
    try:
        before = _answer(facts, database, hidden)
        engine = writer_engine(path)
        with engine.begin() as conn:  # one more message from a hidden sender, dated in a new month
            more = [(ROWS[0][0], "U 0", 1, 1_700_000_000, 1_700_000_000, 5_000, 1, 1)]
            record = next(records_for(more))._replace(mail_id="mid:new", rfc_message_id="new")
            count_batch(conn, [record], source=Source.MBOX, run_id=1)
        close_writer_keeping_sidecars(engine, path)
        after = _answer(facts, database, hidden)
        assert after == _oracle(path, hidden)
        assert after["messages"] == before["messages"] + 1
        assert after["months"] != before["months"]
    finally:
        database.engine.dispose()
        database.fallback_engine.dispose()
