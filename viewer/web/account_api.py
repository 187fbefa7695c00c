"""The account routes: the accounts this viewer serves (for the page's switcher, each with its lock and freshness)
and the change of one account's settings, which the viewer hands to a launched `gmail-stats account`.

Every other route serves the account its `?account=` names (`viewer.web.deps`); these two list and change them.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from shared.account_store import is_address
from shared.errors import ErrorKind
from shared.lock import is_lock_held
from viewer.errors import ApiError
from viewer.launch.refresh import freshness
from viewer.query.queries import DbState
from viewer.web.deps import AccountsDep, StateDep, ViewerState

router = APIRouter(prefix="/api")


class AccountOut(BaseModel):
    """One account: its name (`?account=`), the Gmail address that names it, its lock and its freshness."""

    name: str
    gmail_address: str | None
    db: str = Field(description="`missing`, `empty`, `ready`, ... as /api/status says")
    ingest_lock_held: bool
    refresh: Literal["off", "hourly", "daily"]
    refresh_offered: bool = Field(description="a scan has completed once, so refreshing can be turned on")
    updated_at_unix: int | None = Field(description="the end of the last run that completed")
    next_refresh_unix: int | None
    needs_consent: bool = Field(description="the last scan ended `auth_required`: the person must start a scan")


class AccountsOut(BaseModel):
    accounts: list[AccountOut]
    now_unix: int


class AccountSettingsBody(BaseModel):
    """`POST /api/account/settings?account=NAME`: the refresh interval, or the address of a Takeout-only account."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    refresh: Literal["off", "hourly", "daily"] | None = None
    address: str | None = Field(default=None, max_length=320)


def _account_out(state: ViewerState) -> AccountOut:
    database, db = state.database, DbState.MISSING
    if database.exists():
        with database.connect() as conn:
            db = database.snapshot(conn, with_totals=False).state
    fresh = database.read_ready(freshness)  # None while the database is missing
    return AccountOut(
        name=state.account,
        gmail_address=fresh.gmail_address if fresh else None,
        db=str(db),
        ingest_lock_held=is_lock_held(state.settings.db),
        refresh=fresh.refresh.value if fresh else "off",
        refresh_offered=bool(fresh and fresh.scanned),
        updated_at_unix=fresh.updated_at_unix if fresh else None,
        next_refresh_unix=fresh.next_refresh_unix if fresh else None,
        needs_consent=bool(fresh and fresh.needs_consent),
    )


@router.get("/accounts")
def accounts(accounts: AccountsDep, state: StateDep) -> AccountsOut:
    """Every account beside the viewer's database, the default first."""
    return AccountsOut(
        accounts=[_account_out(accounts.get(name)) for name in accounts.names()], now_unix=int(state.clock())
    )


@router.post("/account/settings")
def change_settings(body: AccountSettingsBody, state: StateDep) -> AccountOut:
    """Runs `gmail-stats account` for the account (the viewer never writes its database) and answers the result."""
    if body.refresh is None and body.address is None:
        raise ApiError(422, ErrorKind.BAD_REQUEST, "give `refresh` or `address`")
    if body.address is not None and not is_address(body.address.strip()):
        raise ApiError(422, ErrorKind.BAD_REQUEST, "address must be an email address such as you@gmail.com")
    state.control.change_settings(refresh=body.refresh, address=body.address)  # its commit moves the generation
    return _account_out(state)
