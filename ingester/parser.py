"""`build_parser`: the `gmail-stats` commands, their flags and their help (user documentation, one `Example:` block
per command). Only argparse and the settings' descriptions; `ingester/cli.py` runs what it parses."""

from __future__ import annotations

import argparse
from pathlib import Path

from ingester import gmail_exports, read_commands
from ingester.arguments import OneLineParser, account_arg, count_arg, run_id_arg
from ingester.settings import IngesterSettings
from shared.settings import flag_help


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", type=Path, metavar="FILE", help=flag_help(IngesterSettings, "db", "database file"))
    parser.add_argument(
        "--account",
        type=account_arg,
        metavar="NAME",
        help=flag_help(IngesterSettings, "account", "the account (mailbox): its own database and token cache"),
    )
    noise = parser.add_mutually_exclusive_group()
    noise.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    noise.add_argument("--verbose", "-v", action="store_true", help="also print every warning")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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
    imp.add_argument("--resume", type=run_id_arg, metavar="RUN_ID", help="continue an interrupted import run")
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
    mode.add_argument("--resume", type=run_id_arg, metavar="RUN_ID", help="continue an interrupted scan run")
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
    scan.add_argument(
        "--paste-redirect",
        action="store_true",
        help="while waiting for consent, also read the address the browser ended on from standard input (the "
        "default when it is a terminal; for a browser on another machine)",
    )
    scan.add_argument(
        "--unattended",
        action="store_true",
        help="never wait for consent: a scan that needs it fails with auth_required (scheduled refreshes, cron)",
    )
    scan.add_argument("--launch-token", help=argparse.SUPPRESS)
    _common(scan)

    account = commands.add_parser(
        "account",
        help="show or set an account's Gmail address and refresh interval",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Show an account's settings, or set them: the Gmail address its links open (`authuser=`; a "
        "scan learns it from Gmail, a Takeout-only account is told it once) and how often the viewer refreshes it "
        "with an incremental scan. Setting one creates the account's database.",
        epilog="Example:\n  gmail-stats account --account old --address old.me@gmail.com\n"
        "  gmail-stats account --refresh hourly\n  gmail-stats account --list",
    )
    account.add_argument("--address", metavar="EMAIL", help="the Gmail address of this account")
    account.add_argument(
        "--refresh", choices=("off", "hourly", "daily"), help="how often the viewer scans this account on its own"
    )
    account.add_argument("--list", action="store_true", help="list the accounts beside the database")
    _common(account)

    runs = commands.add_parser(
        "runs",
        help="list ingestion runs, newest first",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="List ingestion runs (imports and scans), newest first.",
        epilog="Example:\n  gmail-stats runs --limit 5\n  gmail-stats runs --json",
    )
    runs.add_argument("--json", action="store_true", help="print a JSON array of run objects")
    runs.add_argument("--limit", type=count_arg, default=20, metavar="N", help="at most N runs (default 20)")
    _common(runs)

    export = commands.add_parser(
        "export",
        help="write per-sender statistics as JSON or CSV",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write per-sender statistics: the same JSON document the viewer serves at /api/summary.",
        epilog=(
            "Example:\n  gmail-stats export --format csv --output senders.csv\n"
            "  gmail-stats export --format gmail-links --senders picked.txt --unread --address you@gmail.com\n"
            "  gmail-stats export --format gmail-filters --senders picked.txt --archive --mark-read --output f.xml\n"
            "  gmail-stats export --format gmail-filters --last-before 2024-12-01 --archive   # silent 2 years"
        ),
    )
    export.add_argument(
        "--format",
        choices=("json", "csv", *gmail_exports.FORMATS),
        default="json",
        help="output format (default json); gmail-links: Gmail search URLs, one a line; gmail-filters: a file for "
        "Gmail's Settings > Filters > Import filters",
    )
    export.add_argument("--output", type=Path, metavar="FILE", help="write to FILE instead of standard output")
    gmail_exports.add_arguments(export)
    read_commands.add_choice_arguments(export)
    _common(export)
    return parser
