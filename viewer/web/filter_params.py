"""`FilterDep`: the sender filter of `/api/senders`, `/api/domains`, `/api/volume` and the exports, built from one
request's query parameters (hidden sets resolved from the viewer's registry)."""

from __future__ import annotations

import calendar
from datetime import date
from typing import Annotated

from fastapi import Depends, Query, Request
from pydantic import StringConstraints

from shared.errors import ErrorKind
from shared.sender_list import SenderChoice
from viewer.errors import ApiError
from viewer.query.filters import MAX_EXCLUDED, MAX_QUERY, SenderFilter
from viewer.query.hidden import ID_PATTERN, normalise
from viewer.web.deps import viewer_state

MONTH_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"


# `async` on purpose (pure parsing): a sync dependency would cost every polled request a threadpool hop.
async def _sender_filter(
    request: Request,
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
        members = viewer_state(request).hidden.get(hidden)
        if members is None:
            raise ApiError(409, ErrorKind.HIDDEN_UNKNOWN, "this viewer does not hold that hidden set; send it again")
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
