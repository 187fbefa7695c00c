"""The migrated schema is the one `shared.schema.models` declares: types, nullability, defaults, keys and indexes.

Built both ways on real files: every migration step from an empty file (and from each older version), and
`METADATA.create_all` from the models.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migrations import LATEST_VERSION, MIGRATIONS, migrate
from shared.schema.models import METADATA


def _describe(path: Path) -> dict[str, Any]:
    """Every table's columns and every index's shape, independent of how the DDL text was spelled."""
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        tables: dict[str, Any] = {}
        for kind, name, _table in objects:
            if kind != "table" or name.startswith("sender_search_"):
                continue
            columns = []
            for _cid, col, type_, notnull, default, pk in conn.execute(f"PRAGMA table_info({name})"):
                # `id INTEGER PRIMARY KEY` is the rowid: never null, whichever way the DDL says so.
                is_rowid = pk == 1 and type_.upper() == "INTEGER"
                columns.append((col, type_.upper(), bool(notnull) or is_rowid, default, pk))
            indexes = []
            for _seq, index, unique, origin, _partial in conn.execute(f"PRAGMA index_list({name})"):
                parts = [
                    (desc, column if column is not None else ("<expr>" if cid == -2 else "<rowid>"))
                    for _seqno, cid, column, desc, _coll, key in conn.execute(f"PRAGMA index_xinfo({index})")
                    if key
                ]
                label = index if origin == "c" else f"<{origin}>"
                indexes.append((label, bool(unique), tuple(parts)))
            without_rowid = (
                conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,))
                .fetchone()[0]
                .upper()
                .rstrip()
                .endswith("WITHOUT ROWID")
            )
            tables[name] = {"columns": columns, "indexes": sorted(indexes), "without_rowid": without_rowid}
        expressions = {
            name: " ".join(str(sql).split())
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%(%(%'"
            )
        }
        others = sorted((kind, name) for kind, name, _ in objects if kind in ("trigger", "view"))
        search = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'sender_search'").fetchone()
        return {"tables": tables, "expressions": expressions, "others": others, "search": search}
    finally:
        conn.close()


def _from_models(path: Path) -> dict[str, Any]:
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        METADATA.create_all(conn)
    engine.dispose()
    return _describe(path)


def test_migrations_build_exactly_the_models(tmp_path: Path) -> None:
    expected = _from_models(tmp_path / "models.db")
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    migrate(engine)
    close_writer_keeping_sidecars(engine, db)
    actual = _describe(db)
    assert actual == expected
    # Not vacuous: the comparison sees types, defaults, nullability and index order.
    senders = {c[0]: c for c in expected["tables"]["senders"]["columns"]}
    assert senders["domain"] == ("domain", "TEXT", True, "''", 0)
    assert senders["unsubscribe_web"] == ("unsubscribe_web", "TEXT", False, None, 0)
    by_mail_count = (
        "ix_senders_mails_sent",
        False,
        ((1, "mails_sent"), (0, "sender"), (0, "bytes"), (0, "last_seen_unix"), (0, "first_seen_unix")),
    )
    assert by_mail_count in expected["tables"]["senders"]["indexes"]
    assert set(expected["tables"]) == {*METADATA.tables, "sender_search"}


@pytest.mark.parametrize("start", range(1, LATEST_VERSION))
def test_every_older_version_upgrades_to_the_models(tmp_path: Path, start: int) -> None:
    expected = _from_models(tmp_path / "models.db")
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    with engine.begin() as conn:
        for step in MIGRATIONS:
            if step.version <= start:
                step.apply(conn)
        conn.exec_driver_sql(f"PRAGMA user_version = {start}")
    assert [m.version for m in migrate(engine)] == list(range(start + 1, LATEST_VERSION + 1))
    close_writer_keeping_sidecars(engine, db)
    assert _describe(db) == expected


def test_a_difference_is_seen(tmp_path: Path) -> None:
    """The comparison fails on an index direction alone (guards against a description that sees nothing)."""
    expected = _from_models(tmp_path / "models.db")
    db = tmp_path / "stats.db"
    engine = writer_engine(db)
    migrate(engine)
    close_writer_keeping_sidecars(engine, db)
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX ix_senders_bytes")
    conn.execute("CREATE INDEX ix_senders_bytes ON senders (bytes DESC, sender)")
    conn.commit()
    conn.close()
    assert _describe(db) != expected
