"""An account's own settings in its database (`sync_state` rows): read by both services, written by the ingester.

The viewer never writes: it launches `gmail-stats account --refresh …` (or `--address …`) to change them.
"""

from __future__ import annotations

from sqlalchemy import Connection, select
from sqlalchemy.dialects.sqlite import insert

from shared.accounts import GMAIL_ADDRESS_KEY, REFRESH_KEY, AccountSettings, Refresh
from shared.schema.models import sync_state

_MAX_ADDRESS = 320  # RFC 5321's longest path: a longer value is no address


def read_settings(conn: Connection) -> AccountSettings:
    """The account's settings; an unknown refresh value reads as off, an unusable address as none."""
    rows = dict(
        conn.execute(select(sync_state.c.key, sync_state.c.value).where(sync_state.c.key.in_(_KEYS))).tuples().all()
    )
    address = rows.get(GMAIL_ADDRESS_KEY)
    try:
        refresh = Refresh(rows.get(REFRESH_KEY) or Refresh.OFF)
    except ValueError:
        refresh = Refresh.OFF
    return AccountSettings(gmail_address=address if address and is_address(address) else None, refresh=refresh)


def is_address(text: str) -> bool:
    """A plausible mailbox address: one `@` with text on both sides, no spaces or controls, not too long."""
    local, at, domain = text.partition("@")
    return (
        bool(at and local and domain)
        and "@" not in domain
        and len(text) <= _MAX_ADDRESS
        and all(ch.isprintable() and not ch.isspace() for ch in text)
    )


def write_setting(conn: Connection, key: str, value: str) -> None:
    stmt = insert(sync_state).values(key=key, value=value)
    conn.execute(stmt.on_conflict_do_update(index_elements=[sync_state.c.key], set_={"value": stmt.excluded.value}))


_KEYS = (GMAIL_ADDRESS_KEY, REFRESH_KEY)
