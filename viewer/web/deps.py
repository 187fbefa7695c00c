"""The viewer's per-account collaborators as one typed object, the accounts it serves, and the FastAPI
dependencies reading them.

`create_app` stores an `Accounts` (one `ViewerState` per database, datasette's `databases[name]`); every route gets
the state of the account its `?account=` names (the only or first one when omitted) through the `Annotated`
aliases, never `app.state`, so no route or query needs to know that there are several.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Query, Request

from shared.accounts import account_names, is_name
from shared.errors import ErrorKind
from shared.timeutil import Clock
from viewer.errors import ApiError
from viewer.launch.control import RunControl
from viewer.query.database import Database
from viewer.query.hidden import HiddenSets
from viewer.settings import ViewerSettings
from viewer.web.status import RateTracker


@dataclass(frozen=True, slots=True)
class ViewerState:
    account: str  # its name (`shared.accounts`); `settings.db` is its own database file
    settings: ViewerSettings
    database: Database
    control: RunControl
    clock: Clock
    rates: RateTracker
    csrf_token: str
    hidden: HiddenSets  # hidden-sender sets the page registered (`POST /api/hidden`), named by id in `hidden=`


MAX_ACCOUNTS = 32  # accounts served at once, those without a database yet included (each holds two engines)
_NAMES_SECONDS = 1.0  # how long a listing of the data folder answers "which accounts are there"


class Accounts:
    """The accounts beside the base database, each account's `ViewerState` built on first use and kept."""

    def __init__(self, *, base_db: Path, build: Callable[[str], ViewerState]) -> None:
        self.base_db = base_db
        self._build = build
        self._states: dict[str, ViewerState] = {}
        self._lock = threading.Lock()
        self._names: tuple[float, list[str]] = (-_NAMES_SECONDS, [])

    def names(self) -> list[str]:
        """The accounts with a database, the default first (`[default]` before any exists)."""
        stamp, names = self._names
        if time.monotonic() - stamp >= _NAMES_SECONDS:
            names = account_names(self.base_db)
            self._names = (time.monotonic(), names)
        with self._lock:  # an account served here whose database appeared since the folder was listed
            fresh = [name for name, state in self._states.items() if name not in names and state.database.exists()]
        return [*names, *sorted(fresh)] if fresh else names

    def get(self, name: str) -> ViewerState:
        with self._lock:
            state = self._states.get(name)
            if state is None:
                state = self._states[name] = self._build(name)
            return state

    def built(self) -> list[ViewerState]:
        with self._lock:
            return list(self._states.values())

    def resolve(self, requested: str | None) -> ViewerState:
        """The account `?account=` names. A name without a database yet is an empty account (the person imports
        or scans into it, and the ingester creates its file), up to `MAX_ACCOUNTS` accounts in all."""
        if requested is None or requested == "":
            return self.get(self.names()[0])
        if not is_name(requested):
            raise ApiError(404, ErrorKind.UNKNOWN_ACCOUNT, f"{requested[:40]!r} is not an account name")
        with self._lock:
            known, count = requested in self._states, len(self._states)
        if known or count < MAX_ACCOUNTS or requested in account_names(self.base_db):
            return self.get(requested)
        raise ApiError(404, ErrorKind.UNKNOWN_ACCOUNT, f"there is no account {requested!r}; /api/accounts lists them")


def accounts_of(request: Request) -> Accounts:
    """The app's `Accounts`; an app built without one is a programming error, not a request error."""
    accounts = request.app.state.accounts
    if not isinstance(accounts, Accounts):
        raise TypeError("app.state.accounts is not an Accounts; build the app with create_app()")
    return accounts


def viewer_state(request: Request) -> ViewerState:
    """The `ViewerState` of the account the request names (`?account=`)."""
    cached = request.scope.get("gmail_stats.state")
    if isinstance(cached, ViewerState):
        return cached
    state = accounts_of(request).resolve(request.query_params.get("account"))
    request.scope["gmail_stats.state"] = state  # one resolution per request, however many dependencies ask
    return state


# `async` on purpose: they only read `app.state`, and a sync dependency would cost a threadpool hop.

AccountParam = Annotated[
    str | None,
    Query(max_length=64, description="the account (one database per mailbox; the only or first one when omitted)"),
]


async def _state(request: Request, account: AccountParam = None) -> ViewerState:
    """Declares `?account=` on every route (OpenAPI), which `viewer_state` resolves."""
    return viewer_state(request)


async def _accounts(request: Request) -> Accounts:
    return accounts_of(request)


# The whole state as one dependency: FastAPI's per-dependency overhead is a large part of a polled cache hit.
StateDep = Annotated[ViewerState, Depends(_state)]
AccountsDep = Annotated[Accounts, Depends(_accounts)]


async def _database(state: StateDep) -> Database:
    return state.database


async def _control(state: StateDep) -> RunControl:
    return state.control


async def _settings(state: StateDep) -> ViewerSettings:
    return state.settings


async def _clock(state: StateDep) -> Clock:
    return state.clock


DatabaseDep = Annotated[Database, Depends(_database)]
ControlDep = Annotated[RunControl, Depends(_control)]
SettingsDep = Annotated[ViewerSettings, Depends(_settings)]
ClockDep = Annotated[Clock, Depends(_clock)]
