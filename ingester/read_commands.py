"""The reading commands, `runs` and `export`: a read-only engine on an up-to-date database, never the lock.

They work on a database they can only read (a read-only folder or file) and never create or change a file but
the export's own output.
"""

from __future__ import annotations

import argparse
import calendar
import csv
import io
import json
import os
import tempfile
from datetime import date
from pathlib import Path

from sqlalchemy import Engine

from ingester.settings import IngesterSettings
from shared.db import reader_engine
from shared.db_errors import SQLITE_FAILURES, database_error
from shared.errors import DatabaseError, UsageError
from shared.lock import is_lock_held
from shared.resume import CommandStyle, import_command, scan_command
from shared.runs import Run, list_runs
from shared.schema.migrations import LATEST_VERSION, check_not_too_new, schema_version
from shared.sender_list import SenderChoice, every_sender
from shared.summary import all_senders, summary_document
from shared.text.csv_cells import SENDER_CSV_COLUMNS, sender_csv_row
from shared.timeutil import system_clock


def open_for_reading(settings: IngesterSettings) -> Engine:
    """A read-only engine on an up-to-date database: never takes the lock, never writes, never creates a file.

    On a read-only folder or file SQLite cannot open the `-shm` for writing; it is then opened read-only too. A WAL
    database whose sidecars are gone (its writer closed last) in a folder this process cannot write cannot even be
    given a read-only `-shm`: then the main file is read alone (`immutable`), which is exact as no writer can be
    there (a writer needs the folder for its `-wal`).
    """
    if not settings.db_file().is_file():
        style = settings.command_style
        where = "in the stack's data volume" if style == CommandStyle.MAKE else f"at {settings.db_file()}"
        first = f"`{import_command(path='PATH', style=style)}` or `{scan_command(style)}`"
        raise DatabaseError(f"no database {where} yet; run {first} first")
    version: int | None = None
    failure: BaseException | None = None
    for readonly_shm, immutable in ((False, False), (True, False), (True, True)):
        if immutable and not _writerless(settings.db_file()):
            break
        engine = reader_engine(settings.db_file(), readonly_shm=readonly_shm, immutable=immutable)
        try:
            with engine.connect() as conn:
                version = schema_version(conn)
                conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()
        except SQLITE_FAILURES as exc:
            failure = failure or exc
            continue
        break
    if version is None:
        assert failure is not None
        raise database_error(settings.db_file(), failure) from failure
    check_not_too_new(version)
    if version < LATEST_VERSION:
        raise DatabaseError(f"{settings.db_file()} has an older schema; run any import or scan once to upgrade it")
    return engine


def _writerless(db: Path) -> bool:
    """No `-wal` beside the database (every change is in the main file) and a folder nobody here may write."""
    return not Path(f"{db}-wal").exists() and not os.access(db.parent, os.W_OK)


def _format_run(run: Run, *, ingester_alive: bool) -> str:
    counts = f"{run.messages_seen:,} seen, {run.messages_new:,} new"
    extra = f", {run.messages_skipped:,} skipped, {run.messages_excluded:,} excluded, {run.warnings_count} warnings"
    where = f" {run.mbox_path}" if run.mbox_path else ""
    outcome = f"/{run.outcome}" if run.outcome else ""
    error = f" — {run.error}" if run.error else ""
    if run.is_open and not ingester_alive:
        error += " — no ingester holds the lock any more; the next run will mark this one abandoned"
    return f"#{run.run_id} {run.source} {run.state}{outcome}: {counts}{extra}{where}{error}"


def _format_warnings(run: Run) -> list[str]:
    """The run's kept warnings, indented under it; says when older ones were not kept."""
    lines = [f"    warning: {text}" for text in run.warnings_tail]
    if run.warnings_count > len(run.warnings_tail):
        lines.insert(0, f"    (the last {len(run.warnings_tail)} of {run.warnings_count:,} warnings)")
    return lines


def runs_text(settings: IngesterSettings, *, limit: int, as_json: bool, verbose: bool) -> str:
    """`gmail-stats runs`: newest first, as lines (warnings under each run with `verbose`) or as a JSON array."""
    engine = open_for_reading(settings)
    with engine.connect() as conn:
        runs = list_runs(conn, limit=limit)
    if as_json:
        return json.dumps([run.public_dict() for run in runs], indent=2) + "\n"
    if not runs:
        return "no runs yet\n"
    alive = is_lock_held(settings.db_file())
    lines: list[str] = []
    for run in runs:
        lines.append(_format_run(run, ingester_alive=alive))
        lines.extend(_format_warnings(run) if verbose else ())
    return "\n".join(lines) + "\n"


def add_choice_arguments(parser: argparse.ArgumentParser) -> None:
    """`export`'s date and size filters (the viewer's `last_before` … `min_avg_bytes`, docs/api.md)."""
    choose = parser.add_argument_group("choosing senders (every format but a --senders list)")
    for flag, what in (
        ("--last-before", "senders whose last mail is before DAY (YYYY-MM-DD, UTC)"),
        ("--last-after", "senders whose last mail is on or after DAY"),
        ("--first-before", "senders whose first mail is before DAY"),
        ("--first-after", "senders whose first mail is on or after DAY"),
    ):
        choose.add_argument(flag, type=_day, metavar="DAY", help=what)
    choose.add_argument("--min-bytes", type=_count, metavar="N", default=0, help="all their mail: at least N bytes")
    choose.add_argument("--min-avg-bytes", type=_count, metavar="N", default=0, help="average message: at least N")


def choice_from_args(args: argparse.Namespace) -> SenderChoice | None:
    """The filters given, or None (every sender)."""
    choice = SenderChoice(
        last_before=args.last_before,
        last_after=args.last_after,
        first_before=args.first_before,
        first_after=args.first_after,
        min_bytes=args.min_bytes,
        min_avg_bytes=args.min_avg_bytes,
    )
    return None if choice == SenderChoice() else choice


def _day(text: str) -> int:
    try:
        return calendar.timegm(date.fromisoformat(text).timetuple())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day such as 2024-01-31") from exc


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
    return int(text)


def export_text(settings: IngesterSettings, *, as_json: bool, choice: SenderChoice | None = None) -> str:
    """`gmail-stats export`: every sender (or those `choice` keeps) as the summary JSON document or as CSV."""
    engine = open_for_reading(settings)
    buffer = io.StringIO()
    with engine.connect() as conn:
        if as_json:
            document = summary_document(all_senders(conn, choice), now=system_clock())
            json.dump(document, buffer, ensure_ascii=False, indent=2)
            buffer.write("\n")
        else:  # the page's format (`shared.text.csv_cells`): the same columns and ISO dates as `/api/export.csv`
            writer = csv.writer(buffer, lineterminator="\n")
            writer.writerow(SENDER_CSV_COLUMNS)
            writer.writerows(sender_csv_row(row) for row in every_sender(conn, choice))
    return buffer.getvalue()


def write_atomically(target: Path, text: str) -> None:
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}") from exc
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    os.replace(tmp, target)
