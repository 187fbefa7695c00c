"""`gmail-stats account`: show, list or set an account's settings (its Gmail address, its refresh interval).

Setting goes through the ingest session like every write (the account's lock, its migrations); showing only reads.
"""

from __future__ import annotations

from ingester.read_commands import open_for_reading
from ingester.runs.session import ingest_session
from ingester.settings import IngesterSettings
from shared.account_store import is_address, read_settings, write_setting
from shared.accounts import (
    DEFAULT_ACCOUNT,
    GMAIL_ADDRESS_KEY,
    REFRESH_KEY,
    AccountSettings,
    Refresh,
    account_file,
    account_names,
)
from shared.errors import UsageError
from shared.timeutil import system_clock


def set_settings(settings: IngesterSettings, *, address: str | None, refresh: str | None) -> AccountSettings:
    """Writes the given settings into the account's database (created if new) and returns them all."""
    if address is not None and not is_address(address.strip()):
        raise UsageError(f"{address!r} is not an email address")
    with ingest_session(settings.db_file(), clock=system_clock) as engine, engine.begin() as conn:
        if address is not None:
            write_setting(conn, GMAIL_ADDRESS_KEY, address.strip().lower())
        if refresh is not None:
            write_setting(conn, REFRESH_KEY, str(Refresh(refresh)))
        return read_settings(conn)


def show(settings: IngesterSettings) -> AccountSettings:
    engine = open_for_reading(settings)
    try:
        with engine.connect() as conn:
            return read_settings(conn)
    finally:
        engine.dispose()


def describe(name: str, values: AccountSettings) -> str:
    return f"{name}\t{values.gmail_address or '(address unknown)'}\trefresh {values.refresh}"


def account_text(settings: IngesterSettings, *, address: str | None, refresh: str | None, listing: bool) -> str:
    """The command's output: one line per account (`--list`), or the chosen account's line after any change."""
    if listing:
        if address is not None or refresh is not None:
            raise UsageError("--list shows the accounts; set --address or --refresh without it")
        lines = []
        for name in account_names(settings.db):
            if not account_file(settings.db, name).is_file():
                lines.append(f"{name}\t(no database yet)")
                continue
            chosen = settings.model_copy(update={"account": None if name == DEFAULT_ACCOUNT else name})
            lines.append(describe(name, show(chosen)))
        return "\n".join(lines) + "\n"
    name = settings.account or DEFAULT_ACCOUNT
    if address is None and refresh is None:
        return describe(name, show(settings)) + "\n"
    return describe(name, set_settings(settings, address=address, refresh=refresh)) + "\n"
