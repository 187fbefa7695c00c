"""Migrations, WAL, the too-new guard, and the read-only reader the viewer will use."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from shared.db import reader_engine, writer_engine
from shared.errors import SchemaTooNewError
from shared.schema.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from tests.conftest import run_cli
from tests.support.factories import generate_messages, write_mbox


def test_migrations_on_an_empty_database_then_a_no_op(db_path: Path) -> None:
    engine = writer_engine(db_path)
    try:
        applied = migrate(engine)
        assert [m.version for m in applied] == list(range(1, LATEST_VERSION + 1))
        assert migrate(engine) == []
        with engine.connect() as conn:
            assert schema_version(conn) == LATEST_VERSION
            tables = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
    finally:
        engine.dispose()
    assert {"ingest_runs", "senders", "seen_mails", "sync_state"} <= tables


def test_each_migration_is_one_transaction_with_its_version(db_path: Path) -> None:
    versions = [m.version for m in MIGRATIONS]
    assert versions == sorted(set(versions)) == list(range(1, len(versions) + 1))


def test_database_newer_than_the_code_is_refused_and_untouched(tmp_path: Path, db_path: Path) -> None:
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {LATEST_VERSION + 7}")
    raw.close()
    before = db_path.read_bytes()
    engine = writer_engine(db_path)
    with pytest.raises(SchemaTooNewError):
        migrate(engine)
    engine.dispose()
    mbox = tmp_path / "a.mbox"
    write_mbox(mbox, generate_messages(count=2, body_bytes=10))
    result = run_cli("import", mbox, "--db", db_path)
    assert result.returncode == 1
    assert "newer" not in result.stdout
    assert (
        f"schema version {LATEST_VERSION + 7} but this gmail-stats knows only up to {LATEST_VERSION}" in result.stderr
    )
    assert db_path.read_bytes() == before


def test_reader_never_creates_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    engine = reader_engine(missing)
    with pytest.raises(Exception, match="unable to open"), engine.connect():
        pass
    engine.dispose()
    assert not missing.exists()


def test_reader_cannot_write(db_path: Path, migrated_engine: Engine) -> None:
    engine = reader_engine(db_path)
    with pytest.raises(Exception, match=r"readonly|read-only|query_only"), engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO sync_state VALUES ('k', 'v')")
    engine.dispose()


_READ_AS_OTHER_USER = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(conn.execute("SELECT sum(mails_sent) FROM senders").fetchone()[0])
"""


def test_after_an_import_a_read_only_copy_opens_read_only(tmp_path: Path, db_path: Path) -> None:
    """What the viewer sees on a read-only mount: the -wal/-shm files must exist or SQLite refuses (CANTOPEN)."""
    mbox = tmp_path / "a.mbox"
    expected = write_mbox(mbox, generate_messages(count=30, body_bytes=50))
    assert run_cli("import", mbox, "--db", db_path).returncode == 0
    assert Path(f"{db_path}-wal").exists() and Path(f"{db_path}-shm").exists()
    frozen = tmp_path / "readonly"
    frozen.mkdir()
    for name in ("stats.db", "stats.db-wal", "stats.db-shm"):
        shutil.copy2(tmp_path / name, frozen / name)
        (frozen / name).chmod(0o444)
    frozen.chmod(0o555)
    nobody: int | None = None
    python = sys.executable
    if os.geteuid() == 0:
        nobody = 65534  # root ignores permission bits; read as `nobody` instead
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable  # not under /root
        tmp_path.chmod(0o755)
        for parent in tmp_path.parents:
            if parent.stat().st_mode & 0o001 == 0:
                parent.chmod(parent.stat().st_mode | 0o001)
    result = subprocess.run(
        [python, "-c", _READ_AS_OTHER_USER, str(frozen / "stats.db")],
        capture_output=True,
        text=True,
        cwd=frozen,
        check=False,
        user=nobody,
        group=nobody,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == sum(expected.values())


@pytest.mark.parametrize("readonly_shm", [False, True])
def test_a_reader_connection_sees_one_commit_however_many_statements(
    db_path: Path, migrated_engine: Engine, readonly_shm: bool
) -> None:
    """Issue #21: two reads on one connection returned 1 then 2 rows when each SELECT ran in its own transaction."""
    count = "SELECT count(*) FROM sync_state"

    def commit(key: str) -> None:
        with migrated_engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO sync_state (key, value) VALUES (?, 'x')", (key,))

    commit("first")
    reader = reader_engine(db_path, readonly_shm=readonly_shm)
    try:
        with reader.connect() as conn:
            assert conn.exec_driver_sql(count).scalar_one() == 1
            commit("second")  # between two statements of one request
            assert conn.exec_driver_sql(count).scalar_one() == 1
            assert conn.exec_driver_sql("SELECT key FROM sync_state").scalars().all() == ["first"]
        with reader.connect() as conn:  # the next request sees the newest commit
            assert conn.exec_driver_sql(count).scalar_one() == 2
    finally:
        reader.dispose()
