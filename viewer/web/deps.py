"""The viewer's per-app collaborators as one typed object on `app.state`, and the FastAPI dependencies reading it.

`create_app` stores a `ViewerState`; routes get its parts through the `Annotated` aliases, never `app.state`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from shared.timeutil import Clock
from viewer.launch.control import RunControl
from viewer.query.database import Database
from viewer.query.hidden import HiddenSets
from viewer.settings import ViewerSettings
from viewer.web.status import RateTracker


@dataclass(frozen=True, slots=True)
class ViewerState:
    settings: ViewerSettings
    database: Database
    control: RunControl
    clock: Clock
    rates: RateTracker
    csrf_token: str
    hidden: HiddenSets  # hidden-sender sets the page registered (`POST /api/hidden`), named by id in `hidden=`


def viewer_state(request: Request) -> ViewerState:
    """The app's `ViewerState`; an app built without one is a programming error, not a request error."""
    state = request.app.state.viewer
    if not isinstance(state, ViewerState):
        raise TypeError("app.state.viewer is not a ViewerState; build the app with create_app()")
    return state


# `async` on purpose: they only read `app.state`, and a sync dependency would cost a threadpool hop.


async def _state(request: Request) -> ViewerState:
    return viewer_state(request)


async def _database(request: Request) -> Database:
    return viewer_state(request).database


async def _control(request: Request) -> RunControl:
    return viewer_state(request).control


async def _settings(request: Request) -> ViewerSettings:
    return viewer_state(request).settings


async def _clock(request: Request) -> Clock:
    return viewer_state(request).clock


# The whole state as one dependency: FastAPI's per-dependency overhead is a large part of a polled cache hit.
StateDep = Annotated[ViewerState, Depends(_state)]
DatabaseDep = Annotated[Database, Depends(_database)]
ControlDep = Annotated[RunControl, Depends(_control)]
SettingsDep = Annotated[ViewerSettings, Depends(_settings)]
ClockDep = Annotated[Clock, Depends(_clock)]
