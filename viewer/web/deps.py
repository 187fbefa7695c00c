"""The viewer's per-account collaborators (`ViewerState`, one per database, datasette's `databases[name]`), the
`Accounts` it serves, and the dependencies that hand a route the state its `?account=` names (never `app.state`,
so no route or query needs to know that there are several) and the sender filter its query parameters make."""

from __future__ import annotations

import calendar
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Query, Request
from pydantic import StringConstraints

from shared.accounts import account_names, is_name
from shared.errors import ErrorKind
from shared.sender_list import SenderChoice
from shared.timeutil import Clock
from viewer.errors import ApiError
from viewer.launch.control import RunControl
from viewer.query.database import Database
from viewer.query.filters import MAX_EXCLUDED, MAX_QUERY, SenderFilter
from viewer.query.hidden import ID_PATTERN, HiddenSets, normalise
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


class Accounts:
    """The accounts beside the base database, each account's `ViewerState` built on first use and kept."""

    def __init__(self, *, base_db: Path, build: Callable[[str], ViewerState]) -> None:
        self.base_db = base_db
        self._build = build
        self._states: dict[str, ViewerState] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The accounts with a database, the default first (`[default]` before any exists). The data folder is
        listed on every call, so a new account's database shows at once; a listing costs microseconds
        (bench/README.md), nothing a poll would notice."""
        return account_names(self.base_db)

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


# `async` on purpose: they only read `app.state`, and a sync dependency would cost a threadpool hop.
async def accounts_of(request: Request) -> Accounts:
    accounts: Accounts = request.app.state.accounts  # set by create_app()
    return accounts


AccountParam = Annotated[
    str | None,
    Query(max_length=64, description="the account (one database per mailbox; the only or first one when omitted)"),
]


async def _state(request: Request, account: AccountParam = None) -> ViewerState:
    """The `ViewerState` of the account `?account=` names (declared here, so on every route's OpenAPI)."""
    return (await accounts_of(request)).resolve(account)


# The whole state as one dependency: FastAPI's per-dependency overhead is a large part of a polled cache hit.
StateDep = Annotated[ViewerState, Depends(_state)]
AccountsDep = Annotated[Accounts, Depends(accounts_of)]


MONTH_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"


# The sender filter of `/api/senders`, `/api/domains`, `/api/volume` and the exports, built from one request's
# query parameters (hidden sets resolved from the viewer's registry); `async` on purpose, as above.
async def _sender_filter(
    state: StateDep,
    q: Annotated[str, Query(max_length=MAX_QUERY, description="substring of address or name")] = "",
    domain: Annotated[str | None, Query(max_length=253, description="registrable domain, exactly")] = None,
    min_messages: Annotated[int, Query(ge=0, le=2**31, description="senders with at least this many")] = 0,
    min_unread_ratio: Annotated[float, Query(ge=0, le=1, description="unread share, 0 to 1")] = 0.0,
    has_unsubscribe: Annotated[bool | None, Query(description="an unsubscribe link is known (or not)")] = None,
    exclude: Annotated[
        list[Annotated[str, StringConstraints(max_length=320)]],
        Query(max_length=MAX_EXCLUDED, description="hidden senders, one `exclude=` per sender"),
    ] = [],  # noqa: B006 - FastAPI copies defaults per request
    hidden: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="a hidden-sender set registered with `POST /api/hidden`")
    ] = None,
    last_before: Annotated[date | None, Query(description="last mail before this day (YYYY-MM-DD, UTC)")] = None,
    last_after: Annotated[date | None, Query(description="last mail on or after this day")] = None,
    first_before: Annotated[date | None, Query(description="first mail before this day")] = None,
    first_after: Annotated[date | None, Query(description="first mail on or after this day")] = None,
    min_bytes: Annotated[
        int, Query(ge=0, le=2**62, description="all of a sender's mail, at least this many bytes")
    ] = 0,
    min_avg_bytes: Annotated[int, Query(ge=0, le=2**40, description="average message size, at least")] = 0,
    month: Annotated[str | None, Query(pattern=MONTH_PATTERN, description="senders with mail that month (YYYY-MM)")] = (
        None
    ),
) -> SenderFilter:
    excluded = normalise(exclude)
    if hidden is not None:
        members = state.hidden.require(hidden, what="hidden set")
        excluded = normalise((*excluded, *members)) if excluded else members
    return SenderFilter(
        q=q.replace("\x00", "").strip(),  # FTS5 refuses a NUL inside a phrase; no address or name holds one
        domain=domain.strip().lower() if domain is not None and domain.strip() else None,
        min_messages=min_messages,
        min_unread_ratio=min_unread_ratio,
        has_unsubscribe=has_unsubscribe,
        exclude=excluded,
        choice=SenderChoice(
            last_before=_unix(last_before),
            last_after=_unix(last_after),
            first_before=_unix(first_before),
            first_after=_unix(first_after),
            min_bytes=min_bytes,
            min_avg_bytes=min_avg_bytes,
        ),
        month=month,
    )


def _unix(day: date | None) -> int | None:
    """The day's start, UTC, in unix seconds (the table's dates are UTC days too)."""
    return None if day is None else calendar.timegm(day.timetuple())


FilterDep = Annotated[SenderFilter, Depends(_sender_filter)]
