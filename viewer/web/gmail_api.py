"""`/api/gmail/…`: Gmail search links and a Gmail filters file for a selection of senders; read-only, no Google call.

The selection is either a sender set the page registered with `POST /api/hidden` (`selected=`), or every sender
matching the table's filters (the same parameters as `/api/senders`). The links and the file are built by
`shared.actions.gmail_search` and `shared.actions.gmail_filters`, which `gmail-stats export` uses too.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from shared.actions.gmail_filters import MAX_LABEL, FilterActions, filters_file
from shared.actions.gmail_search import Narrowing, split_links, valid_account
from shared.errors import ErrorKind, UsageError
from viewer.errors import ApiError
from viewer.launch.refresh import freshness
from viewer.query.filters import SenderFilter
from viewer.query.hidden import ID_PATTERN
from viewer.query.queries import DbState
from viewer.query.sender_queries import SortKey, SortOrder, iter_senders
from viewer.web.deps import FilterDep, StateDep
from viewer.web.export import download
from viewer.web.schemas import GmailLinkOut, GmailLinksOut

router = APIRouter(prefix="/api/gmail")

Selected = Annotated[
    str | None, Query(pattern=ID_PATTERN, description="a sender set registered with `POST /api/hidden`")
]
Address = Annotated[
    str | None,
    Query(max_length=320, description="the Gmail address to open (`authuser=`); default: the account's own"),
]


def _senders(state: StateDep, selected: str | None, f: SenderFilter) -> Iterator[str]:
    if selected is not None:
        yield from state.hidden.require(selected, what="sender set")
        return
    with state.database.read_snapshot() as read:
        if read is not None and read[1].state is DbState.READY:
            for row in iter_senders(read[0], f=f, sort=SortKey.MAILS_SENT, order=SortOrder.DESC):
                yield row.sender


def _address(state: StateDep, address: str | None) -> str | None:
    """The address links open in: the one asked for, else the one the account's scan learnt (or was told)."""
    if address:
        address = address.strip()
        if not valid_account(address):
            raise ApiError(422, ErrorKind.BAD_REQUEST, "address must be a Gmail address such as you@gmail.com")
        return address
    fresh = state.database.read_ready(freshness)
    stored = fresh.gmail_address if fresh is not None else None
    return stored if stored is not None and valid_account(stored) else None


@router.get("/links")
def gmail_links(
    state: StateDep,
    f: FilterDep,
    selected: Selected = None,
    address: Address = None,
    unread: Annotated[bool, Query(description="unread mail only (`is:unread`)")] = False,
    older_than_months: Annotated[int | None, Query(ge=1, le=1200, description="`older_than:Nm`")] = None,
    larger_mb: Annotated[int | None, Query(ge=1, le=100, description="`larger:NM`")] = None,
    inbox: Annotated[bool, Query(description="in the Inbox only (`in:inbox`)")] = False,
) -> GmailLinksOut:
    """Numbered Gmail search links naming each selected sender exactly once, each URL at most 2,000 characters."""
    narrowing = Narrowing(
        unread_only=unread, older_than_months=older_than_months, larger_than_mb=larger_mb, in_inbox=inbox
    )
    made = split_links(_senders(state, selected, f), narrowing, account=_address(state, address))
    return GmailLinksOut(
        links=[
            GmailLinkOut(number=link.number, query=link.query, url=link.url, senders=len(link.senders))
            for link in made.links
        ],
        senders=sum(len(link.senders) for link in made.links),
        left_out=list(made.left_out),
    )


@router.get("/filters.xml", response_class=Response, responses=download("application/xml", "filters"))
def gmail_filters(
    state: StateDep,
    f: FilterDep,
    selected: Selected = None,
    address: Address = None,
    archive: Annotated[bool, Query(description="skip the Inbox")] = False,
    mark_read: Annotated[bool, Query(description="mark as read")] = False,
    trash: Annotated[bool, Query(description="delete (to Trash)")] = False,
    never_spam: Annotated[bool, Query(description="never send to Spam")] = False,
    label: Annotated[str | None, Query(max_length=MAX_LABEL, description="apply this label")] = None,
) -> Response:
    """A Gmail filters file (Settings → Filters → Import filters) for the selection, as an attachment."""
    actions = FilterActions(archive=archive, mark_read=mark_read, trash=trash, never_spam=never_spam, label=label)
    try:
        made = filters_file(
            _senders(state, selected, f),
            actions,
            now=datetime.fromtimestamp(state.clock(), tz=UTC),
            author=_address(state, address),
        )
    except UsageError as exc:
        raise ApiError(422, ErrorKind.BAD_REQUEST, str(exc)) from exc
    return Response(
        made.xml,
        media_type="application/xml; charset=utf-8",
        headers={
            "Content-Disposition": 'attachment; filename="gmail-stats-filters.xml"',
            "X-Gmail-Stats-Filters": str(made.filters),
            "X-Gmail-Stats-Senders": str(made.senders),
        },
    )
