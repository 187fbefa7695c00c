"""Helpers that run a real import in-process against a real database file and read the results back."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

from ingester.mbox.importer import ImportRequest, run_import
from ingester.runs.outcome import RunResult
from ingester.runs.report import QuietReporter
from ingester.runs.session import ingest_session
from shared.db import reader_engine
from shared.summary import all_senders, summary_document
from shared.timeutil import system_clock


def import_file(
    db: Path, path: Path, *, workers: int = 0, cancel: threading.Event | None = None, **request: Any
) -> RunResult:
    with ingest_session(db, clock=system_clock) as engine:
        return run_import(
            engine=engine,
            request=ImportRequest(path=path, **request),
            reporter=QuietReporter(),
            cancel=cancel or threading.Event(),
            clock=system_clock,
            parse_workers=workers,
        )


def senders_of(db: Path) -> dict[str, dict[str, Any]]:
    engine = reader_engine(db)
    try:
        with engine.connect() as conn:
            document = summary_document(all_senders(conn), now=0)
    finally:
        engine.dispose()
    return {row["sender"]: row for row in document["senders"]}


def counts_of(db: Path) -> dict[str, int]:
    """Messages per sender key, senders left with none omitted; reads any schema version (plain sqlite3)."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT sender, mails_sent FROM senders WHERE mails_sent > 0").fetchall()
    return {str(sender): int(count) for sender, count in rows}


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    engine = reader_engine(db)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()
