"""Helpers for viewer tests: seeded real database files, a `TestClient` per configuration, polling."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient

from ingester.records import MailRecord
from ingester.store.store import count_batch
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import create_run, finish_run, update_run
from shared.schema import models
from shared.schema.migration_rollups import BACKFILL_ROLLUPS
from shared.schema.migrations import migrate
from shared.schema.models import RunOutcome, RunState, Source
from tests.support.factories import mbox_bytes as mbox_bytes  # the mbox builders live in tests/support/factories.py
from tests.support.polling import wait_for as wait_for  # the one polling helper, importable from here too
from viewer.app import create_app
from viewer.launch.launcher import Launcher
from viewer.settings import ViewerSettings
from viewer.web.deps import Accounts, ViewerState

BASE_URL = "http://127.0.0.1:7878"
T = TypeVar("T")

# sender, display_name, mails_sent, first_seen, last_seen, bytes, unread, list_unsubscribe[, target, one-click]
SENDERS: list[tuple[Any, ...]] = [
    (
        "news@shop.example",
        "Shop News",
        40,
        1_600_000_000,
        1_700_000_300,
        400_000,
        30,
        1,
        "https://shop.example/u",
        True,
    ),
    ("alice@example.com", "Alice", 12, 1_600_000_100, 1_700_000_100, 50_000, 0, 0),
    ("bob@example.com", "Bob", 12, 1_600_000_200, 1_700_000_200, 90_000, 2, 0),
    ("12345", "", 3, None, None, 3_000, 0, 0),
    ("", "", 1, 1_600_000_000, 1_600_000_000, 700, 1, 0),
    ("100%_real@odd.example", "Percent", 2, 1_650_000_000, 1_650_000_000, 1_000, 0, 1, "mailto:u@odd.example"),
]


def records_for(senders: Sequence[tuple[Any, ...]]) -> Iterator[MailRecord]:
    """Messages that add up to each row's totals: first and last dates, bytes, unread and List-Unsubscribe counts.

    An optional 9th field is the unsubscribe target, 10th whether it is one-click (both on the newest message).
    """
    for sender, name, count, first, last, size, unread, unsubscribe, *target in senders:
        for i in range(count):
            date = None if first is None else first if i == 0 else last
            newest = i == count - 1
            web = target[0] if target and newest and str(target[0]).startswith("http") else None
            mailto = target[0] if target and newest and str(target[0]).startswith("mailto") else None
            yield MailRecord(
                mail_id=f"mid:{i}.{sender}",
                rfc_message_id=f"{i}.{sender}",
                gmail_id=None,
                sender=sender,
                display_name=name,
                date_unix=date,
                size_bytes=size // count + (size % count if i == 0 else 0),
                labels="",
                unread=i < unread,
                list_unsubscribe=i < unsubscribe,
                unsubscribe_web=web,
                unsubscribe_mailto=mailto,
                one_click=bool(target[1:2] and target[1] and newest),
            )


def seed(
    db_path: Path, senders: Sequence[tuple[Any, ...]] = SENDERS, *, finished_runs: int = 1, through_store: bool = True
) -> None:
    """A migrated real file with senders and finished mbox runs, closed the way the ingester closes it."""
    engine = writer_engine(db_path)
    migrate(engine)
    with engine.begin() as conn:
        if through_store:
            # Through the ingesters' own writer, so the rollups and the search index are the real ones.
            count_batch(conn, list(records_for(senders)), source=Source.MBOX, run_id=1)
        else:
            # Only `senders` rows, in one block of pages (tests that damage the table need that layout).
            columns = ("sender", "display_name", "mails_sent", "first_seen_unix", "last_seen_unix", "bytes", "unread")
            conn.execute(
                models.senders.insert(),
                [
                    {
                        **dict(zip(columns, row[:7], strict=True)),
                        "list_unsubscribe": row[7],
                        "search_key": models.search_key(row[0], row[1]),
                    }
                    for row in senders
                ],
            )
            for statement in BACKFILL_ROLLUPS:  # the sums a migrated file starts with
                conn.exec_driver_sql(statement)
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
        # Generous for a loaded 2-core CI, where a real ingester's start alone took 7-10 s: a launch answered
        # before its row exists has no run id, and a cancelled import killed mid-way never writes `cancelled`.
        "cancel_grace_seconds": 60.0,
        "run_row_wait_seconds": 60.0,
    }
    values.update(overrides)
    return ViewerSettings(**values)


@contextmanager
def viewer(settings: ViewerSettings, *, launcher: Launcher | None = None, **kwargs: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings, launcher=launcher), base_url=BASE_URL, **kwargs) as client:
        yield client


def state_of(client: TestClient) -> ViewerState:
    """The first account's `ViewerState` of the app a `TestClient` drives (under `create_app`'s ASGI wrappers)."""
    app: Any = client.app
    while not isinstance(getattr(getattr(app, "state", None), "accounts", None), Accounts):
        app = app.app
    accounts: Accounts = app.state.accounts
    return accounts.get(accounts.names()[0])


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
