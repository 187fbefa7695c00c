"""Accounts: one database (and one token cache) per mailbox, side by side in the data folder (datasette's
`databases[name]`). Pure naming and listing rules shared by the ingester (`--account`) and the viewer (`?account=`).

The database configured as `db` (`stats.db`) is the account `default`, so a database of before accounts is account
one with no step; account `work` is `stats.work.db` beside it, with the token cache `tokencache.work.json`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from shared.errors import UsageError

DEFAULT_ACCOUNT = "default"
# No dots: `stats.NAME.db` must name one account only, and no name may climb out of the folder.
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# The keys of `sync_state` an account's settings live under (written by the ingester only).
GMAIL_ADDRESS_KEY = "gmail_address"
REFRESH_KEY = "refresh"


class Refresh(StrEnum):
    """How often the viewer starts an incremental scan of an account on its own."""

    OFF = "off"
    HOURLY = "hourly"
    DAILY = "daily"

    @property
    def interval_seconds(self) -> int | None:
        return {Refresh.OFF: None, Refresh.HOURLY: 3600, Refresh.DAILY: 86400}[self]


def check_name(name: str) -> str:
    """`name` when it can name an account (1-32 of a-z, 0-9, `_`, `-`, starting with a letter or digit)."""
    if not _NAME.fullmatch(name):
        raise UsageError(f"{name!r} cannot name an account: use 1 to 32 of a-z, 0-9, _ and -, starting with a-z or 0-9")
    return name


def is_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name))


def account_file(base: Path, account: str | None) -> Path:
    """The file of `account` beside `base` (`stats.db` → `stats.work.db`); `base` itself for the default account."""
    if account is None or account == DEFAULT_ACCOUNT:
        return base
    check_name(account)
    return base.with_name(f"{base.stem}.{account}{base.suffix}")


def account_names(base_db: Path) -> list[str]:
    """The accounts whose databases exist beside `base_db`, default first, then by name; `[default]` if none does."""
    named: list[str] = []
    prefix, suffix = f"{base_db.stem}.", base_db.suffix
    try:
        entries = list(base_db.parent.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        middle = entry.name[len(prefix) : len(entry.name) - len(suffix)] if suffix else entry.name[len(prefix) :]
        if (
            entry.name.startswith(prefix)
            and entry.name.endswith(suffix)
            and is_name(middle)
            and middle != DEFAULT_ACCOUNT
            and entry.is_file()
        ):
            named.append(middle)
    names = [DEFAULT_ACCOUNT] if base_db.is_file() else []
    names += sorted(named)
    return names or [DEFAULT_ACCOUNT]


@dataclass(frozen=True, slots=True)
class AccountSettings:
    """An account's own settings as stored in its database: the Gmail address and the refresh interval."""

    gmail_address: str | None
    refresh: Refresh
