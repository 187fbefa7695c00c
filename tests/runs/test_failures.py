"""One line for every failure: unwritable folders, read-only, corrupt and too-new databases give one line on
stderr saying what to do and the README's exit code, never a traceback; `runs` and `export` need only read."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, ingester_env
from tests.support.factories import generate_messages, write_mbox

# As root, permissions do not apply; an unprivileged user namespace takes the capabilities away (and the process
# still owns its files, so it can read the code and the interpreter).
_AS_USER = ["unshare", "--user"] if os.geteuid() == 0 and shutil.which("unshare") else []


def cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_AS_USER, sys.executable, "-m", "ingester", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ingester_env(),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
    )


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gmail-stats: ")
    return lines[0]


@pytest.fixture
def mbox(tmp_path: Path) -> Path:
    path = tmp_path / "mail.mbox"
    write_mbox(path, generate_messages(count=20, body_bytes=50, senders=4))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "data"
    path.mkdir()
    yield path
    for item in [path, *path.iterdir()]:
        item.chmod(0o755 if item.is_dir() else 0o644)


def _read_only(folder: Path, *, files: bool) -> None:
    if files:
        for item in folder.iterdir():
            item.chmod(0o444)
    folder.chmod(0o555)


def test_unwritable_folder(folder: Path, mbox: Path) -> None:
    _read_only(folder, files=False)
    line = one_line(cli("import", mbox, "--db", folder / "stats.db"), 1)
    assert line == (
        f"gmail-stats: cannot open the ingest lock file {folder}/stats.db.ingest.lock (Permission denied); "
        "the ingester needs a folder it can write: fix its permissions or choose another with --db"
    )


def test_read_only_database_file(folder: Path, mbox: Path) -> None:
    db = folder / "stats.db"
    assert cli("import", mbox, "--db", db, "--quiet").returncode == 0
    db.chmod(0o444)
    line = one_line(cli("import", mbox, "--db", db), 1)
    assert line == f"gmail-stats: the database {db} is read-only; make it writable, or choose another --db"
    listing = cli("runs", "--db", db)
    assert listing.returncode == 0 and listing.stdout.startswith("#1 mbox done/complete"), listing.stderr


@pytest.mark.parametrize("sidecars", ["kept", "gone"])
@pytest.mark.parametrize("files", [False, True])
def test_runs_and_export_only_read(folder: Path, mbox: Path, files: bool, sidecars: str) -> None:
    """Also when the WAL database's `-wal`/`-shm` are gone (a writer that closed last deletes them), which a
    read-only folder cannot give back."""
    db = folder / "stats.db"
    assert cli("import", mbox, "--db", db, "--quiet").returncode == 0
    if sidecars == "gone":
        for sidecar in (f"{db}-wal", f"{db}-shm"):
            Path(sidecar).unlink()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    _read_only(folder, files=files)
    runs = cli("runs", "--json", "--db", db)
    assert runs.returncode == 0, runs.stderr
    assert [r["state"] for r in json.loads(runs.stdout)] == ["done"]
    text = cli("runs", "--db", db)
    assert text.returncode == 0 and text.stdout.startswith("#1 mbox done/complete"), text.stderr
    export = cli("export", "--db", db)
    assert export.returncode == 0, export.stderr
    assert sum(s["mails_sent"] for s in json.loads(export.stdout)["senders"]) == 20
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert after.keys() == before.keys()  # nothing created
    # Nothing written but SQLite's shared-memory index, which a `mode=ro` reader rebuilds where it may.
    assert {k: v for k, v in after.items() if k != "stats.db-shm"} == {
        k: v for k, v in before.items() if k != "stats.db-shm"
    }


def test_corrupt_database(folder: Path, mbox: Path) -> None:
    db = folder / "stats.db"
    db.write_bytes(b"this is not an SQLite database, just some bytes\n" * 200)
    expected = (
        f"gmail-stats: {db} is not a gmail-stats database or is damaged (file is not a database); "
        "choose another --db, or move it away to start afresh"
    )
    assert one_line(cli("import", mbox, "--db", db), 1) == expected
    assert one_line(cli("runs", "--db", db), 1) == expected
    assert one_line(cli("export", "--db", db), 1) == expected


def test_too_new_database(folder: Path, mbox: Path) -> None:
    db = folder / "stats.db"
    assert cli("import", mbox, "--db", db, "--quiet").returncode == 0
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 999")
    for args in (("import", mbox), ("runs",), ("export",)):
        line = one_line(cli(*args, "--db", db), 1)
        assert "schema version 999" in line and "upgrade gmail-stats" in line
