"""`gmail-stats export --format gmail-links | gmail-filters`: Gmail search links or a Gmail filters file.

The senders come from a list the person wrote or edited (one address per line, or the CSV `export` writes), or
else from the database, most mail first. Read-only like `export`; the links and the XML are `shared`'s.
"""

from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ingester.account_command import show
from ingester.read_commands import choice_from_args, open_for_reading
from ingester.settings import IngesterSettings
from shared.actions.gmail_filters import FilterActions, filters_file
from shared.actions.gmail_search import Narrowing, split_links, valid_account
from shared.errors import GmailStatsError, UsageError
from shared.sender_list import SenderChoice
from shared.summary import all_senders

FORMATS = ("gmail-links", "gmail-filters")
LINK_FLAGS = ("unread", "older_than_months", "larger_mb", "inbox")
FILTER_FLAGS = ("archive", "mark_read", "trash", "never_spam", "label")


@dataclass(frozen=True, slots=True)
class GmailExport:
    text: str
    note: str  # one line for standard error: what was written and what was left out


def read_sender_list(text: str) -> list[str]:
    """Senders from a list: one per line (blank lines and `#` comments skipped), or `export`'s CSV (its column)."""
    lines = text.splitlines()
    if lines and lines[0].split(",")[0].strip().lstrip("\ufeff") == "sender":
        return [row["sender"] for row in csv.DictReader(io.StringIO(text.lstrip("\ufeff"))) if row.get("sender")]
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _senders(settings: IngesterSettings, senders_file: Path | None, choice: SenderChoice | None = None) -> list[str]:
    if senders_file is None:
        engine = open_for_reading(settings)
        with engine.connect() as conn:
            return [row.sender for row in all_senders(conn, choice)]
    if choice is not None:
        raise UsageError("--senders names the senders already; the date and size filters choose from the database")
    try:
        text = senders_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the sender list {senders_file}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{senders_file} is not UTF-8 text; write one address per line") from exc
    found = read_sender_list(text)
    if not found:
        raise UsageError(f"{senders_file} names no sender; write one address per line")
    return found


def _account(settings: IngesterSettings, account: str | None) -> str | None:
    """The address links open in: the one given with `--address`, else the one the account's database knows."""
    if account is not None and not valid_account(account):
        raise UsageError(f"--address {account!r} is not a Gmail address such as you@gmail.com")
    if account is not None:
        return account
    try:
        stored = show(settings).gmail_address
    except GmailStatsError:
        return None  # no database (a senders file was given): the first signed-in account
    return stored if stored is not None and valid_account(stored) else None


def _left_out(left_out: tuple[str, ...]) -> str:
    return (
        f"; {len(left_out):,} left out (no letter or digit, or too long): {', '.join(map(repr, left_out[:5]))}"
        if (left_out)
        else ""
    )


def gmail_links(
    settings: IngesterSettings,
    *,
    senders_file: Path | None,
    narrowing: Narrowing,
    account: str | None,
    choice: SenderChoice | None = None,
) -> GmailExport:
    made = split_links(_senders(settings, senders_file, choice), narrowing, account=_account(settings, account))
    named = sum(len(link.senders) for link in made.links)
    text = "".join(f"{link.url}\n" for link in made.links)
    return GmailExport(text=text, note=f"{len(made.links):,} links for {named:,} senders{_left_out(made.left_out)}")


def gmail_filters(
    settings: IngesterSettings,
    *,
    senders_file: Path | None,
    actions: FilterActions,
    account: str | None,
    now: float,
    choice: SenderChoice | None = None,
) -> GmailExport:
    made = filters_file(
        _senders(settings, senders_file, choice),
        actions,
        now=datetime.fromtimestamp(now, tz=UTC),
        author=_account(settings, account),
    )
    note = f"{made.filters:,} filters for {made.senders:,} senders{_left_out(made.left_out)}"
    return GmailExport(text=made.xml, note=note)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    gmail = parser.add_argument_group("gmail-links and gmail-filters")
    gmail.add_argument(
        "--senders",
        type=Path,
        metavar="FILE",
        help="the senders to act on: one address or domain a line, or a CSV from --format csv (default: every sender)",
    )
    gmail.add_argument(
        "--address",
        metavar="ADDRESS",
        help="your Gmail address: links open in that account (default: the one the account's scan learnt)",
    )
    gmail.add_argument("--unread", action="store_true", help="gmail-links: unread mail only (is:unread)")
    gmail.add_argument("--older-than-months", type=int, metavar="N", help="gmail-links: older than N months")
    gmail.add_argument("--larger-mb", type=int, metavar="N", help="gmail-links: larger than N MB")
    gmail.add_argument("--inbox", action="store_true", help="gmail-links: in the Inbox only (in:inbox)")
    gmail.add_argument("--archive", action="store_true", help="gmail-filters: skip the Inbox")
    gmail.add_argument("--mark-read", action="store_true", help="gmail-filters: mark as read")
    gmail.add_argument("--trash", action="store_true", help="gmail-filters: delete")
    gmail.add_argument("--never-spam", action="store_true", help="gmail-filters: never send to Spam")
    gmail.add_argument("--label", metavar="NAME", help="gmail-filters: apply the label NAME")


def flags_given(args: argparse.Namespace) -> list[str]:
    """The Gmail flags set on the command line, as typed (`--mark-read`)."""
    names = ("senders", "address", *LINK_FLAGS, *FILTER_FLAGS)
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name) not in (None, False)]


def from_args(args: argparse.Namespace, settings: IngesterSettings, *, now: float) -> GmailExport:
    """The export `args` ask for; a `UsageError` for a flag of the other format."""
    links = args.format == "gmail-links"
    for name in FILTER_FLAGS if links else LINK_FLAGS:
        if getattr(args, name) not in (None, False):
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} applies to --format {'gmail-filters' if links else 'gmail-links'} only")
    for name in ("older_than_months", "larger_mb"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if links:
        narrowing = Narrowing(
            unread_only=args.unread,
            older_than_months=args.older_than_months,
            larger_than_mb=args.larger_mb,
            in_inbox=args.inbox,
        )
        made = gmail_links(
            settings,
            senders_file=args.senders,
            narrowing=narrowing,
            account=args.address,
            choice=choice_from_args(args),
        )
    else:
        actions = FilterActions(
            archive=args.archive,
            mark_read=args.mark_read,
            trash=args.trash,
            never_spam=args.never_spam,
            label=args.label,
        )
        made = gmail_filters(
            settings,
            senders_file=args.senders,
            actions=actions,
            account=args.address,
            now=now,
            choice=choice_from_args(args),
        )
    return made
