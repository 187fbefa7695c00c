"""`gmail-stats` command line: parse arguments, build the real collaborators, map our errors to exit codes.

The only place that catches `GmailStatsError`; every other module raises.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.exc import OperationalError

from ingester import run_request
from ingester.importer import ImportRequest, check_mbox_path, run_import
from ingester.report import make_reporter
from ingester.session import ingest_session
from ingester.settings import IngesterSettings
from ingester.signals import cancel_on_signals
from shared.db import reader_engine
from shared.errors import DatabaseError, GmailStatsError, UsageError
from shared.lock import is_lock_held
from shared.migrations import LATEST_VERSION, check_not_too_new, schema_version
from shared.models import RunState
from shared.runs import Run, list_runs
from shared.settings import flag_help
from shared.summary import SENDER_COLUMNS, all_senders, summary_document
from shared.timeutil import system_clock

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", type=Path, metavar="FILE", help=flag_help(IngesterSettings, "db", "database file"))
    noise = parser.add_mutually_exclusive_group()
    noise.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    noise.add_argument("--verbose", "-v", action="store_true", help="also print every warning")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmail-stats",
        description="Count who fills your Gmail: import a Takeout mbox (or scan Gmail) into a local SQLite file.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    imp = commands.add_parser(
        "import",
        help="count the messages of a Google Takeout .mbox file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Count the messages of a Google Takeout mbox export. Spam, Trash and Chat are left out.",
        epilog="Example:\n  gmail-stats import ~/Takeout/Mail/'All mail Including Spam and Trash.mbox'\n"
        "  gmail-stats import big.mbox --resume 3",
    )
    imp.add_argument("path", type=Path, help="the .mbox file")
    imp.add_argument("--resume", type=int, metavar="RUN_ID", help="continue an interrupted import run")
    imp.add_argument("--include-spam-trash", action="store_true", help="also count Spam and Trash")
    imp.add_argument(
        "--confine-to",
        type=Path,
        metavar="DIR",
        help="refuse PATH unless it is a regular file inside DIR reached without following a link (launchers)",
    )
    imp.add_argument("--launch-token", help=argparse.SUPPRESS)
    _common(imp)

    scan = commands.add_parser(
        "scan",
        help="count the messages of your Gmail account through the Gmail API (metadata only)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Count your Gmail messages through the Gmail API with read-only access to metadata (headers, "
        "labels, sizes; never bodies). The first scan asks for consent in the browser; later scans read only "
        "what changed. Spam and Trash are left out.",
        epilog="Example:\n  gmail-stats scan --credentials ~/credentials.json\n  gmail-stats scan --resume 4\n"
        "  gmail-stats scan --backfill-message-ids",
    )
    mode = scan.add_mutually_exclusive_group()
    mode.add_argument("--resume", type=int, metavar="RUN_ID", help="continue an interrupted scan run")
    mode.add_argument(
        "--full", action="store_true", help="list the whole mailbox instead of the changes since last scan"
    )
    mode.add_argument(
        "--backfill-message-ids",
        action="store_true",
        help="fetch missing Message-IDs of older scan rows and remove double counts with imports",
    )
    scan.add_argument(
        "--credentials", type=Path, metavar="PATH", help=flag_help(IngesterSettings, "credentials", "OAuth client file")
    )
    scan.add_argument(
        "--tokens", type=Path, metavar="PATH", help=flag_help(IngesterSettings, "tokens", "token cache file")
    )
    scan.add_argument("--launch-token", help=argparse.SUPPRESS)
    _common(scan)

    runs = commands.add_parser(
        "runs",
        help="list ingestion runs, newest first",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="List ingestion runs (imports and scans), newest first.",
        epilog="Example:\n  gmail-stats runs --limit 5\n  gmail-stats runs --json",
    )
    runs.add_argument("--json", action="store_true", help="print a JSON array of run objects")
    runs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (default 20)")
    _common(runs)

    export = commands.add_parser(
        "export",
        help="write per-sender statistics as JSON or CSV",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write per-sender statistics: the same JSON document the viewer serves at /api/summary.",
        epilog="Example:\n  gmail-stats export --format csv --output senders.csv",
    )
    export.add_argument("--format", choices=("json", "csv"), default="json", help="output format (default json)")
    export.add_argument("--output", type=Path, metavar="FILE", help="write to FILE instead of standard output")
    _common(export)
    return parser


def _settings(args: argparse.Namespace) -> IngesterSettings:
    overrides: dict[str, Any] = {}
    if args.db is not None:
        overrides["db"] = args.db
    for name in ("credentials", "tokens", "launch_token"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    return IngesterSettings(**overrides)


def _cmd_import(args: argparse.Namespace, settings: IngesterSettings) -> int:
    path = run_request.confine(args.confine_to, args.path) if args.confine_to is not None else args.path
    request = ImportRequest(
        path=path,
        include_spam_trash=args.include_spam_trash,
        resume_run_id=args.resume,
        launch_token=settings.launch_token,
    )
    check_mbox_path(request.path)  # refuse bad input before the database is created or locked
    reporter = make_reporter(quiet=args.quiet, verbose=args.verbose, unit_bytes=True)
    cancel = threading.Event()
    with cancel_on_signals(cancel), ingest_session(settings.db, clock=system_clock) as engine:
        result = run_import(
            engine=engine,
            request=request,
            reporter=reporter,
            cancel=cancel,
            clock=system_clock,
            parse_workers=settings.effective_parse_workers(),
        )
    summary = (
        f"run {result.run_id} {result.state}: {result.messages_seen:,} messages read, {result.messages_new:,} new, "
        f"{result.messages_excluded:,} excluded (spam/trash/chat), {result.messages_skipped:,} skipped"
    )
    if result.state == RunState.CANCELLED:
        print(f"cancelled; resume with: {result.resume_hint(request.path)}", file=sys.stderr, flush=True)
    if not args.quiet:
        print(summary, file=sys.stderr)
    return EXIT_OK


def _print_consent_url(url: str) -> None:
    # Always printed (also with --quiet): without it nobody can give consent. stdout, flushed at once.
    print(
        f"Open this link in a browser on this machine to allow read-only access to Gmail metadata:\n{url}", flush=True
    )


def _cmd_scan(args: argparse.Namespace, settings: IngesterSettings) -> int:
    from ingester.auth import GoogleAccess
    from ingester.backfill import BackfillRequest, BackfillResult, run_backfill
    from ingester.scan import run_scan
    from ingester.scan_types import ScanRequest, ScanResult, ScanTuning

    reporter = make_reporter(quiet=args.quiet, verbose=args.verbose, unit_bytes=False)
    access = GoogleAccess(
        credentials_path=settings.credentials,
        tokens_path=settings.tokens,
        oauth_bind=settings.oauth_bind,
        oauth_port=settings.oauth_port,
        auth_timeout=settings.auth_timeout,
        api_endpoint=settings.api_endpoint,
        http_timeout=settings.http_timeout,
        note=reporter.note,
    )
    tuning = ScanTuning.from_settings(settings)
    cancel = threading.Event()
    result: ScanResult | BackfillResult
    with cancel_on_signals(cancel), ingest_session(settings.db, clock=system_clock) as engine:
        if args.backfill_message_ids:
            result = run_backfill(
                engine=engine,
                request=BackfillRequest(launch_token=settings.launch_token),
                access=access,
                tuning=tuning,
                reporter=reporter,
                cancel=cancel,
                clock=system_clock,
                on_consent_url=_print_consent_url,
            )
        else:
            result = run_scan(
                engine=engine,
                request=ScanRequest(resume_run_id=args.resume, full=args.full, launch_token=settings.launch_token),
                access=access,
                tuning=tuning,
                reporter=reporter,
                cancel=cancel,
                clock=system_clock,
                on_consent_url=_print_consent_url,
            )
    if result.state == RunState.CANCELLED:
        print(f"cancelled; resume with: {result.resume_hint()}", file=sys.stderr, flush=True)
    if not args.quiet:
        print(result.summary(), file=sys.stderr)
    return EXIT_OK


def _open_for_reading(settings: IngesterSettings) -> Any:
    if not settings.db.is_file():
        raise DatabaseError(f"no database at {settings.db} yet; run `gmail-stats import PATH` first")
    engine = reader_engine(settings.db)
    with engine.connect() as conn:
        version = schema_version(conn)
    check_not_too_new(version)
    if version < LATEST_VERSION:
        raise DatabaseError(f"{settings.db} has an older schema; run any import or scan once to upgrade it")
    return engine


def _format_run(run: Run, *, ingester_alive: bool) -> str:
    counts = f"{run.messages_seen:,} seen, {run.messages_new:,} new"
    extra = f", {run.messages_skipped:,} skipped, {run.messages_excluded:,} excluded, {run.warnings_count} warnings"
    where = f" {run.mbox_path}" if run.mbox_path else ""
    outcome = f"/{run.outcome}" if run.outcome else ""
    error = f" — {run.error}" if run.error else ""
    if run.is_open and not ingester_alive:
        error += " — no ingester holds the lock any more; the next run will mark this one abandoned"
    return f"#{run.run_id} {run.source} {run.state}{outcome}: {counts}{extra}{where}{error}"


def _cmd_runs(args: argparse.Namespace, settings: IngesterSettings) -> int:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    engine = _open_for_reading(settings)
    with engine.connect() as conn:
        runs = list_runs(conn, limit=args.limit)
    if args.json:
        json.dump([run.public_dict() for run in runs], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        alive = is_lock_held(settings.db)
        for run in runs:
            print(_format_run(run, ingester_alive=alive))
        if not runs:
            print("no runs yet")
    return EXIT_OK


def _cmd_export(args: argparse.Namespace, settings: IngesterSettings) -> int:
    engine = _open_for_reading(settings)
    with engine.connect() as conn:
        senders = all_senders(conn)
    document = summary_document(senders, now=system_clock())
    buffer = io.StringIO()
    if args.format == "json":
        json.dump(document, buffer, ensure_ascii=False, indent=2)
        buffer.write("\n")
    else:
        writer = csv.DictWriter(buffer, fieldnames=SENDER_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(document["senders"])
    if args.output is None:
        sys.stdout.write(buffer.getvalue())
    else:
        _write_atomically(args.output, buffer.getvalue())
    return EXIT_OK


def _write_atomically(target: Path, text: str) -> None:
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror}") from exc
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    os.replace(tmp, target)


_COMMANDS = {"import": _cmd_import, "scan": _cmd_scan, "runs": _cmd_runs, "export": _cmd_export}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # A runner container's `run-request import|scan`: the command line its (untrusted) request file asks for.
        argv = run_request.expand(sys.argv[1:] if argv is None else argv, now=system_clock)
    except GmailStatsError as exc:
        print(f"gmail-stats: {exc}", file=sys.stderr)
        return exc.exit_code
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
        return _COMMANDS[args.command](args, settings)
    except GmailStatsError as exc:
        print(f"gmail-stats: {exc}", file=sys.stderr)
        return exc.exit_code
    except OperationalError as exc:
        print(f"gmail-stats: database error: {exc.orig}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
