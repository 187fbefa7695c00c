"""`gmail-stats` command line: parse arguments, build the real collaborators, map our errors to exit codes.

The only place that catches `GmailStatsError`; every other module raises.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingester import gmail_exports
from ingester.account_command import account_text
from ingester.gmail.consent import PastedLines
from ingester.mbox.importer import ImportRequest, check_mbox_path, run_import
from ingester.parser import build_parser
from ingester.read_commands import choice_from_args, export_text, runs_text, write_atomically
from ingester.runs import run_request
from ingester.runs.outcome import RunResult
from ingester.runs.report import make_reporter
from ingester.runs.session import ingest_session
from ingester.runs.signals import cancel_on_signals
from ingester.settings import IngesterSettings
from shared.accounts import DEFAULT_ACCOUNT
from shared.db_errors import SQLITE_FAILURES, database_error
from shared.errors import GmailStatsError, UsageError
from shared.resume import CommandStyle, resume_command, runs_command
from shared.schema.models import RunState, Source
from shared.timeutil import system_clock

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def _settings(args: argparse.Namespace) -> IngesterSettings:
    overrides: dict[str, Any] = {}
    if args.db is not None:
        overrides["db"] = args.db
    for name in ("credentials", "tokens", "launch_token", "account"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    return IngesterSettings(**overrides)


def _cmd_import(args: argparse.Namespace, settings: IngesterSettings) -> int:
    path, read_path = args.path, None
    if args.confine_to is not None:
        # Opened once, checked, and read through that descriptor: the descriptor stays open until the process ends.
        path, fd = run_request.open_confined(args.confine_to, args.path)
        read_path = run_request.pinned_path(fd)
    resume = _Resume(settings, source=Source.MBOX, mbox=path, import_dir=args.confine_to)
    request = ImportRequest(
        path=path,
        include_spam_trash=args.include_spam_trash,
        resume_run_id=args.resume,
        launch_token=settings.launch_token,
        shown_path=resume.mbox,  # the run row names the file as its resume command does (the host's path)
        read_path=read_path,
    )
    check_mbox_path(request.source(), named=request.path)  # refuse bad input before the database is created or locked
    reporter = make_reporter(quiet=args.quiet, verbose=args.verbose, unit_bytes=True)
    cancel = threading.Event()
    with (
        cancel_on_signals(cancel, abort_note=resume.abort_note),
        ingest_session(settings.db_file(), clock=system_clock) as engine,
    ):
        result = run_import(
            engine=engine,
            request=request,
            reporter=reporter,
            cancel=cancel,
            clock=system_clock,
            parse_workers=settings.effective_parse_workers(),
            resume_hint=resume,
        )
    return _report(result, quiet=args.quiet, runs=resume.runs_command())


class _Resume:
    """This process's resume command, written by `shared.resume` for its settings (database, file, style).

    It remembers the run it was last asked about, so the abort message of a second Ctrl-C can name it.
    """

    def __init__(
        self, settings: IngesterSettings, *, source: Source, mbox: Path | None, import_dir: Path | None = None
    ) -> None:
        self.source = source
        self.style = settings.command_style
        make = self.style == CommandStyle.MAKE
        default_db = settings.db == IngesterSettings.model_fields["db"].default
        self.db = None if make or default_db else str(settings.db.absolute())
        self.mbox = settings.host_mbox or _host_path(mbox, import_dir, settings.host_import_dir)
        self.account = settings.account
        self.last = ""

    def __call__(self, run_id: int) -> str:
        self.last = resume_command(
            source=self.source, run_id=run_id, style=self.style, db=self.db, mbox_path=self.mbox, account=self.account
        )
        return self.last

    def runs_command(self) -> str:
        """The command listing the runs' warnings, in this process's words (`make runs` under Docker)."""
        return runs_command(self.style, self.db)

    def abort_note(self) -> str:
        if not self.last:
            return "nothing was started yet"
        return f"committed work is kept; resume later with: {self.last}"


def _host_path(mbox: Path | None, import_dir: Path | None, host_import_dir: str | None) -> str | None:
    """`mbox` as the host names it: a runner's import folder (`--confine-to`) is the host's `host_import_dir`."""
    if mbox is None:
        return None
    if import_dir is not None and host_import_dir and mbox.is_relative_to(import_dir):
        return f"{host_import_dir.rstrip('/')}/{mbox.relative_to(import_dir).as_posix()}"
    return str(mbox.absolute())


def _report(result: RunResult, *, quiet: bool, runs: str) -> int:
    if result.state == RunState.CANCELLED:
        print(f"cancelled; resume with: {result.resume_command}", file=sys.stderr, flush=True)
    if not quiet:
        print(result.summary(runs_command=runs), file=sys.stderr)
    return EXIT_OK


def _print_consent_url(url: str) -> None:
    # Always printed (also with --quiet): without it nobody can give consent. stdout, flushed at once.
    print(
        f"Open this link in a browser on this machine to allow read-only access to Gmail metadata:\n{url}", flush=True
    )


def _print_consent_url_and_paste(url: str) -> None:
    _print_consent_url(url)
    print(
        "If the browser then shows an unreachable page (it runs on another machine), paste its address here "
        "and press Enter:",
        flush=True,
    )


def _refused_paste(line: str) -> None:
    print(f"gmail-stats: {line}", file=sys.stderr, flush=True)


def _pasted_lines(args: argparse.Namespace) -> PastedLines | None:
    """Standard input as pasted redirect addresses: on a terminal, or when asked; never for unattended runs."""
    stdin = sys.stdin
    if stdin is None or not (args.paste_redirect or stdin.isatty()):
        return None
    return PastedLines(stdin.readline)


def _cmd_scan(args: argparse.Namespace, settings: IngesterSettings) -> int:
    from ingester.gmail.auth import GoogleAccess
    from ingester.gmail.backfill import BackfillRequest, run_backfill
    from ingester.gmail.scan import run_scan
    from ingester.gmail.scan_types import ScanRequest, ScanTuning

    reporter = make_reporter(quiet=args.quiet, verbose=args.verbose, unit_bytes=False)
    pasted = None if args.unattended else _pasted_lines(args)
    on_consent_url = _print_consent_url if pasted is None else _print_consent_url_and_paste
    access = GoogleAccess(
        credentials_path=settings.credentials,
        tokens_path=settings.tokens_file(),
        oauth_bind=settings.oauth_bind,
        oauth_port=settings.oauth_port,
        auth_timeout=settings.auth_timeout,
        unattended=args.unattended,
        api_endpoint=settings.api_endpoint,
        http_timeout=settings.http_timeout,
        note=reporter.note,
        shown_secrets=settings.host_secrets,
        pasted=pasted,
        on_refused_paste=_refused_paste,
        account=settings.account or DEFAULT_ACCOUNT,
    )
    tuning = ScanTuning.from_settings(settings)
    cancel = threading.Event()
    result: RunResult
    resume = _Resume(settings, source=Source.BACKFILL if args.backfill_message_ids else Source.GMAIL_API, mbox=None)
    with (
        cancel_on_signals(cancel, abort_note=resume.abort_note),
        ingest_session(settings.db_file(), clock=system_clock) as engine,
    ):
        if args.backfill_message_ids:
            result = run_backfill(
                engine=engine,
                request=BackfillRequest(launch_token=settings.launch_token),
                access=access,
                tuning=tuning,
                reporter=reporter,
                cancel=cancel,
                clock=system_clock,
                on_consent_url=on_consent_url,
                resume_hint=resume,
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
                on_consent_url=on_consent_url,
                resume_hint=resume,
            )
    return _report(result, quiet=args.quiet, runs=resume.runs_command())


def _cmd_runs(args: argparse.Namespace, settings: IngesterSettings) -> int:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    sys.stdout.write(runs_text(settings, limit=args.limit, as_json=args.json, verbose=args.verbose))
    return EXIT_OK


def _cmd_export(args: argparse.Namespace, settings: IngesterSettings) -> int:
    if args.format in gmail_exports.FORMATS:
        made = gmail_exports.from_args(args, settings, now=system_clock())
        if not args.quiet:
            print(f"gmail-stats: {made.note}", file=sys.stderr)
        text = made.text
    elif gmail_exports.flags_given(args):
        raise UsageError(f"{gmail_exports.flags_given(args)[0]} applies to --format gmail-links or gmail-filters only")
    else:
        text = export_text(settings, as_json=args.format == "json", choice=choice_from_args(args))
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_atomically(args.output, text)
    return EXIT_OK


def _cmd_account(args: argparse.Namespace, settings: IngesterSettings) -> int:
    text = account_text(settings, address=args.address, refresh=args.refresh, listing=args.list)
    if not args.quiet:
        sys.stdout.write(text)
    return EXIT_OK


_COMMANDS = {
    "import": _cmd_import,
    "scan": _cmd_scan,
    "runs": _cmd_runs,
    "export": _cmd_export,
    "account": _cmd_account,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # A runner container's `run-request import|scan`: the command line its (untrusted) request file asks for.
        argv = run_request.expand(sys.argv[1:] if argv is None else argv, now=system_clock)
    except GmailStatsError as exc:
        print(f"gmail-stats: {exc}", file=sys.stderr)
        return exc.exit_code
    args = build_parser().parse_args(argv)
    settings: IngesterSettings | None = None
    try:
        settings = _settings(args)
        return _COMMANDS[args.command](args, settings)
    except GmailStatsError as exc:
        print(f"gmail-stats: {exc}", file=sys.stderr)
        return exc.exit_code
    except SQLITE_FAILURES as exc:  # a read that failed past `open_for_reading` (e.g. damage deeper in the file)
        where = settings.db_file() if settings is not None else Path("the database")
        print(f"gmail-stats: {database_error(where, exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
