"""HTTP schemas (pydantic at the edge only): the request body and every JSON answer, i.e. the OpenAPI contract.

Routes build these from the query dataclasses; nothing here reads the database or `app.state`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# SQLite integers are signed 64-bit: anything larger cannot name a row and must not reach the driver.
MAX_ID = 2**63 - 1


class LaunchBody(BaseModel):
    """`POST /api/runs`: a new scan, a new import of a file in the import folder, or a resume of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["mbox", "gmail_api"] = Field(description="`mbox` imports `path`; `gmail_api` scans")
    path: str | None = Field(default=None, max_length=4096)
    resume_run_id: int | None = Field(default=None, ge=1, le=MAX_ID)


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class ErrorOut(_Out):
    """Every error answer: `{"error": kind, "message": text}`, plus `hint` on a failed launch."""

    error: str
    message: str
    hint: str | None = None


class SenderOut(_Out):
    sender: str
    display_name: str
    mails_sent: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    bytes: int
    unread: int
    list_unsubscribe: int


class SendersOut(_Out):
    """One page of senders plus the whole-table totals the header shows."""

    total: int = Field(description="senders matching the search")
    senders: list[SenderOut]
    total_messages: int
    total_senders: int
    top_sender: SenderOut | None
    generated_at_unix: int


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
    csrf_token: str = Field(description="send it back as the X-Gmail-Stats-Csrf header on every POST")
    now_unix: int


class RunsOut(_Out):
    runs: list[RunOut]
    now_unix: int


class ImportFileOut(_Out):
    path: str = Field(description="relative to the import folder, with `/` separators")
    size: int
    mtime_unix: int


class ImportsOut(_Out):
    import_dir: str = Field(description="the import folder as configured, for the terminal command the page shows")
    import_dir_exists: bool = Field(description='lets the page say "create the folder" instead of "no file yet"')
    files: list[ImportFileOut]


class LaunchedOut(_Out):
    run_id: int | None = Field(description="None when the ingester had not written its run row within the wait")


class CancelledOut(_Out):
    run_id: int


class RunLogOut(_Out):
    run_id: int
    lines: list[str]
