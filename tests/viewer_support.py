"""Helpers for viewer tests: seeded real database files, a `TestClient` per configuration, polling."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.migrations import migrate
from shared.models import RunOutcome, RunState, Source
from shared.runs import create_run, finish_run, update_run
from tests.factories import mbox_bytes as mbox_bytes  # the mbox builders live in tests/factories.py
from tests.polling import wait_for as wait_for  # the one polling helper, importable from here too
from viewer.app import create_app
from viewer.launcher import Launcher
from viewer.settings import ViewerSettings

BASE_URL = "http://127.0.0.1:7878"
T = TypeVar("T")

# sender, display_name, mails_sent, first_seen, last_seen, bytes, unread, list_unsubscribe
SENDERS: list[tuple[str, str, int, int | None, int | None, int, int, int]] = [
    ("news@shop.example", "Shop News", 40, 1_600_000_000, 1_700_000_300, 400_000, 30, 1),
    ("alice@example.com", "Alice", 12, 1_600_000_100, 1_700_000_100, 50_000, 0, 0),
    ("bob@example.com", "Bob", 12, 1_600_000_200, 1_700_000_200, 90_000, 2, 0),
    ("12345", "", 3, None, None, 3_000, 0, 0),
    ("", "", 1, 1_600_000_000, 1_600_000_000, 700, 1, 0),
    ("100%_real@odd.example", "Percent", 2, 1_650_000_000, 1_650_000_000, 1_000, 0, 1),
]


def seed(db_path: Path, senders: Sequence[tuple[Any, ...]] = SENDERS, *, finished_runs: int = 1) -> None:
    """A migrated real file with senders and finished mbox runs, closed the way the ingester closes it."""
    engine = writer_engine(db_path)
    migrate(engine)
    with engine.begin() as conn:
        for row in senders:
            conn.execute(
                text(
                    "INSERT INTO senders (sender, display_name, mails_sent, first_seen_unix, last_seen_unix, bytes,"
                    " unread, list_unsubscribe) VALUES (:s, :d, :m, :f, :l, :b, :u, :lu)"
                ),
                dict(zip(("s", "d", "m", "f", "l", "b", "u", "lu"), row, strict=True)),
            )
        for n in range(finished_runs):
            run_id = create_run(
                conn,
                source=Source.MBOX,
                pid=4242,
                now=1_700_000_000 + n,
                mbox_path=f"/nowhere/{n}.mbox",
                bytes_total=1000,
                mbox_fingerprint="secret-fingerprint",
            )
            update_run(conn, run_id, now=1_700_000_010 + n, bytes_done=1000, messages_seen=70, messages_new=70)
            finish_run(conn, run_id, state=RunState.DONE, outcome=RunOutcome.COMPLETE, now=1_700_000_020 + n)
    close_writer_keeping_sidecars(engine, db_path)


def make_settings(tmp_path: Path, **overrides: Any) -> ViewerSettings:
    values: dict[str, Any] = {
        "db": tmp_path / "stats.db",
        "import_dir": tmp_path / "imports",
        "launcher": "process",
        "allowed_hosts": (),
        "ingest_bin": None,
        "cancel_grace_seconds": 10.0,
        "run_row_wait_seconds": 10.0,
    }
    values.update(overrides)
    return ViewerSettings(**values)


@contextmanager
def viewer(settings: ViewerSettings, *, launcher: Launcher | None = None, **kwargs: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings, launcher=launcher), base_url=BASE_URL, **kwargs) as client:
        yield client


def csrf_headers(client: TestClient) -> dict[str, str]:
    token = client.get("/api/status").json()["csrf_token"]
    return {"X-Gmail-Stats-Csrf": token, "Content-Type": "application/json"}


def file_digests(db_path: Path) -> dict[str, str]:
    """SHA-256 of the database and every sidecar beside it (`-wal`, `-shm`, the lock file)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(db_path.parent.iterdir())
        if p.name.startswith(db_path.name)
    }
