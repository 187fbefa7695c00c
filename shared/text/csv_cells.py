"""The one senders CSV format (its columns, ISO 8601 dates), with cells made safe to open in a spreadsheet: a text cell
that a spreadsheet would read as a formula is written as text. Pure functions, shared by the viewer's `export.csv`
and `gmail-stats export --format csv`.

The rule is OWASP's (https://owasp.org/www-community/attacks/CSV_Injection): a cell starting with `=`, `+`, `-`,
`@`, a tab or a carriage return gets a single quote in front, which spreadsheets show as text and never evaluate.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Protocol

# OWASP's list: formula starts (=, +, -, @) and the two controls some spreadsheets skip before one (tab, CR).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: object) -> object:
    """`value` with a leading `'` when it is text that would start a formula; numbers and other text unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def neutralise_row(values: Iterable[object]) -> list[object]:
    return [neutralise_cell(value) for value in values]


SENDER_CSV_COLUMNS = (
    "sender",
    "display_name",
    "domain",
    "mails_sent",
    "unread",
    "unread_ratio",
    "bytes",
    "first_seen",
    "last_seen",
    "list_unsubscribe",
    "unsubscribe_url",
    "one_click",
    "gmail_url",
)


class SenderFields(Protocol):
    """What a CSV row is made of (`shared.sender_list.SenderListRow`)."""

    @property
    def sender(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def mails_sent(self) -> int: ...
    @property
    def unread(self) -> int: ...
    @property
    def unread_ratio(self) -> float: ...
    @property
    def bytes(self) -> int: ...
    @property
    def first_seen_unix(self) -> int | None: ...
    @property
    def last_seen_unix(self) -> int | None: ...
    @property
    def list_unsubscribe(self) -> int: ...
    @property
    def unsubscribe_url(self) -> str | None: ...
    @property
    def one_click(self) -> bool: ...
    @property
    def gmail_url(self) -> str: ...


def iso_date(unix: int | None) -> str:
    """ISO 8601 in UTC ("2024-01-31T09:05:00Z"); empty when unknown or outside what a calendar can show."""
    if unix is None:
        return ""
    try:
        return datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return ""


def sender_csv_row(row: SenderFields) -> list[object]:
    """One sender's cells in `SENDER_CSV_COLUMNS` order, text that would start a formula neutralised."""
    return neutralise_row(
        (
            row.sender,
            row.display_name,
            row.domain,
            row.mails_sent,
            row.unread,
            row.unread_ratio,
            row.bytes,
            iso_date(row.first_seen_unix),
            iso_date(row.last_seen_unix),
            row.list_unsubscribe,
            row.unsubscribe_url or "",
            int(row.one_click),
            row.gmail_url,
        )
    )
