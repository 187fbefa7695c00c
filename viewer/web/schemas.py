"""HTTP schemas (pydantic at the edge only): the request body and every JSON answer, i.e. the OpenAPI contract.

Routes build these from the query dataclasses; nothing here reads the database or `app.state`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.dataclasses import dataclass

from shared.summary import SenderRow
from viewer.query.hidden import MAX_HIDDEN
from viewer.query.rollup_queries import DomainRow, MonthCount

# SQLite integers are signed 64-bit: anything larger cannot name a row and must not reach the driver.
MAX_ID = 2**63 - 1


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class _Body(_Out):
    model_config = ConfigDict(extra="forbid")


class LaunchBody(_Body):
    """`POST /api/runs`: a new scan, a new import of a file in the import folder, or a resume of a run."""

    source: Literal["mbox", "gmail_api"] = Field(description="`mbox` imports `path`; `gmail_api` scans")
    path: str | None = Field(default=None, max_length=4096)
    resume_run_id: int | None = Field(default=None, ge=1, le=MAX_ID)


class ConsentBody(_Body):
    """`POST /api/runs/{run_id}/consent`: the address the browser ended on after consent, when it could not reach
    the scan (a browser on another machine); only its `state` and `code` are used."""

    address: str = Field(max_length=4096, description="e.g. `http://127.0.0.1:8765/?state=…&code=…`")


class HiddenBody(_Body):
    """`POST /api/hidden`: the page's hidden senders, registered once and then named by id in `hidden=`."""

    senders: list[Annotated[str, StringConstraints(max_length=320)]] = Field(max_length=MAX_HIDDEN)


class ErrorOut(_Out):
    """Every error answer: `{"error": kind, "message": text}`, plus `hint` on a failed launch."""

    error: str
    message: str
    hint: str | None = None


# Every route may answer with the error shape (`create_app` declares it once for all): 4XX for the request
# (including the guard's 403/413/415), 503 for a database it cannot read right now. Declaring 422 here also replaces
# FastAPI's own `{"detail": ...}` schema.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorOut, "description": "the request was refused"},
    503: {"model": ErrorOut, "description": "the database is busy, unreadable or too new"},
}


# A row a query returns as it is: a pydantic dataclass derived from the query's, so its part of the contract cannot
# drift from what the route sends. A field declared again only adds its description; it keeps its place.
@dataclass(frozen=True)
class SenderOut(SenderRow):
    pass


@dataclass(frozen=True)
class SenderRowOut(SenderOut):
    """A row of `/api/senders`: the summary columns plus what the page acts on (links only, never fetched)."""

    domain: str = Field(description="registrable domain (public-suffix aware); '' when the address has none")
    unread_ratio: float = Field(description="unread / mails_sent, 0 to 1, rounded to 4 places")
    unsubscribe_url: str | None = Field(
        description="the latest List-Unsubscribe target: https (or http) when offered, else mailto; null when none"
    )
    one_click: bool = Field(description="that target accepts RFC 8058 one-click (List-Unsubscribe-Post)")
    gmail_url: str = Field(description="a Gmail web search for mail from this sender")


class HiddenOut(_Out):
    hidden: str = Field(description="the set's id: pass it as `hidden=` to the senders, domains, volume and export")
    count: int = Field(description="distinct hidden senders in the set (trimmed)")


class SendersOut(_Out):
    """One page of senders; the totals leave out hidden (`exclude=`) senders, as the rows do."""

    total: int = Field(description="senders matching every filter; past 30,000 only with `exact_count=true`")
    total_exact: bool = Field(
        description="false: the count stopped at `total` (30,000) and more match; ask with `exact_count=true`"
    )
    matched_messages: int | None = Field(
        description="messages of the senders matching every filter (null: not counted)"
    )
    senders: list[SenderRowOut]
    total_messages: int = Field(description="all messages except those of hidden senders")
    total_senders: int = Field(description="all senders except hidden ones")
    top_sender: SenderRowOut | None = Field(description="the sender with most mail, hidden ones left out")
    generated_at_unix: int


@dataclass(frozen=True)
class DomainOut(DomainRow):
    list_unsubscribe: Annotated[int, Field(description="messages that carried a List-Unsubscribe header")]


class DomainsOut(_Out):
    """One page of registrable domains; `mails_sent` over all domains adds up to `total_messages`."""

    total: int = Field(description="domains matching the search (and not wholly hidden)")
    total_messages: int = Field(description="all messages except those of hidden senders")
    domains: list[DomainOut]
    generated_at_unix: int


@dataclass(frozen=True)
class MonthOut(MonthCount):
    month: Annotated[str, Field(description="UTC calendar month, YYYY-MM; months without mail in between are zeros")]


class VolumeOut(_Out):
    """Mail per month; `sum(months.messages) + undated` is exactly the scope's message count."""

    months: list[MonthOut]
    undated: int = Field(description="messages without a usable date")


class SummaryOut(_Out):
    """The same document `gmail-stats export` writes."""

    total_messages: int
    senders: list[SenderOut]
    generated_at_unix: int


class RunOut(_Out):
    """A run as the page sees it: no private columns, no PID, and the import file relative to the import folder."""

    run_id: int
    source: str
    state: str
    started_at_unix: int
    updated_at_unix: int
    finished_at_unix: int | None
    messages_seen: int
    messages_new: int
    messages_skipped: int
    messages_excluded: int
    total_estimate: int | None
    bytes_total: int | None
    bytes_done: int
    mbox_path: str | None = Field(
        description="the imported file relative to the import folder (only its name when it lies outside)"
    )
    error_kind: str | None
    error: str | None
    auth_url: str | None
    warnings_count: int
    warnings_tail: list[str]
    outcome: str | None
    owned: bool = Field(description="started (or adopted) by this viewer, so it can cancel it and show its log")
    stopped_unexpectedly: bool = Field(
        default=False,
        description="derived, the row untouched: it is still `running` but no ingester holds the ingest lock and "
        "the runner this viewer started has exited, so it was killed or crashed; resume it to finish",
    )
    unfetched: int = Field(
        default=0, description="scans: messages listed but not fetched yet (the next scan fetches them)"
    )


class StatusOut(_Out):
    db: str
    ingest_lock_held: bool
    active_run: RunOut | None
    last_run: RunOut | None
    owns_active_run: bool
    mixed_sources: bool
    unrepaired_count: int
    rate_per_sec: float | None
    eta_seconds: float | None
    retrying: bool = Field(description="the active run is waiting to retry Gmail calls (rate limit or errors)")
    csrf_token: str = Field(description="send it back as the X-Gmail-Stats-Csrf header on every POST")
    now_unix: int


class RunsOut(_Out):
    runs: list[RunOut]
    now_unix: int


class ImportFileOut(_Out):
    path: str = Field(description="relative to the import folder, with `/` separators")
    size: int
    mtime_unix: int
    command: str = Field(description="the terminal command that imports this file (`make import …` under Docker)")


class ImportsOut(_Out):
    import_dir: str = Field(description="the import folder as the person names it (under Docker: the host's)")
    import_dir_exists: bool = Field(description='lets the page say "create the folder" instead of "no file yet"')
    files: list[ImportFileOut]
    unreadable_names: list[str] = Field(
        description="`.mbox` files whose names are not valid UTF-8, shown with `\\xNN` escapes: rename them to import"
    )
    import_command: str = Field(description="the import command with a placeholder path, before a file is picked")
    scan_command: str = Field(description="the terminal command that scans Gmail (`make scan` under Docker)")
    runs_command: str = Field(description="the terminal command that lists runs with their errors (`make runs`)")


class LaunchedOut(_Out):
    run_id: int | None = Field(description="None when the ingester had not written its run row within the wait")


class CancelledOut(_Out):
    run_id: int


class ConsentOut(_Out):
    run_id: int = Field(description="the scan now has its consent code; its run row shows how it goes on")


class RunLogOut(_Out):
    run_id: int
    lines: list[str]


class GmailLinkOut(_Out):
    number: int = Field(description="1-based; open them in order")
    query: str = Field(description="the Gmail search, e.g. `from:(a@x.com OR b@y.com) is:unread`")
    url: str = Field(description="the Gmail web search, at most 2,000 characters")
    senders: int = Field(description="how many senders this link names")


class GmailLinksOut(_Out):
    """`GET /api/gmail/links`: every selected sender named by exactly one link."""

    links: list[GmailLinkOut]
    senders: int
    left_out: list[str] = Field(description="senders Gmail cannot search for (no letter or digit, or too long)")
