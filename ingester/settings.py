"""The ingester's one settings object, built in `cli.main` (flags given on the command line override it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from shared.accounts import DEFAULT_ACCOUNT, account_file, check_name
from shared.settings import CommonSettings


class IngesterSettings(CommonSettings):
    """Environment: `GMAIL_STATS_DB` (shared with the viewer), the launcher's token, and the Gmail scan's tuning."""

    parse_workers: int | None = Field(
        default=None,
        ge=0,
        description="Child processes that parse an mbox in parallel (0 parses in-process; default: one per CPU, "
        "at most 4).",
    )
    launch_token: str | None = Field(
        default=None,
        description="Set by the viewer when it launches an ingester; stored on the run row so it finds its run.",
    )
    host_mbox: str | None = Field(
        default=None,
        description="The host path of the mbox being imported, as given to `make import MBOX=`: recorded on the "
        "run and used in printed resume commands instead of the container's path (the Makefile sets it).",
    )
    host_secrets: str | None = Field(
        default=None,
        description="The secrets folder as the host names it (compose sets it from GMAIL_STATS_SECRETS): errors "
        "about credentials.json and the token cache name it instead of the container's /secrets.",
    )
    account: str | None = Field(
        default=None,
        description="The account (mailbox) to work on: its database `stats.NAME.db` and token cache "
        "`tokencache.NAME.json` sit beside `db` and `tokens` (unset, or `default`: those files themselves).",
    )
    credentials: Path = Field(
        default=Path("./credentials.json"),
        description="OAuth client-secret file of your Desktop OAuth client (downloaded from Google Cloud Console).",
    )
    tokens: Path = Field(
        default=Path("./tokencache.json"),
        description="Token cache written after consent (mode 0600); delete it and revoke access to disconnect.",
    )
    oauth_port: int = Field(
        default=8765,
        ge=1,
        le=65535,
        description="Port of the loopback listener for Google's consent redirect (http://127.0.0.1:PORT/).",
    )
    oauth_bind: str = Field(
        default="127.0.0.1",
        description="Address the consent listener binds; 0.0.0.0 inside a container whose port is published on "
        "the host's 127.0.0.1.",
    )
    auth_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds to wait for consent in the browser before the scan fails with auth_required.",
    )
    quota_units_per_sec: float = Field(
        default=250.0,
        gt=0,
        description="Gmail quota units per second to pace calls at (Gmail's per-user limit is 250).",
    )
    api_endpoint: str = Field(
        default="https://gmail.googleapis.com/",
        description="Base URL replacing https://gmail.googleapis.com/ (tests and proxies).",
    )
    scan_workers: int = Field(
        default=3,
        ge=1,
        le=16,
        description="Worker threads fetching metadata batches, each with its own connection.",
    )
    retry_attempts: int = Field(
        default=7,
        ge=1,
        le=20,
        description="Attempts per Gmail call before its messages are left for the next scan (or the run fails).",
    )
    retry_base_seconds: float = Field(
        default=0.25,
        gt=0,
        description="First backoff delay after a transient Gmail error; it doubles per retry, up to 8 s, with jitter.",
    )
    first_scan_order: Literal["random", "listing"] = Field(
        default="random",
        description="Order of a first full scan's fetches: `random` lists every id first, then fetches threads in a "
        "seeded random order, so the viewer can estimate every sender while it runs (docs/scanning.md); `listing` "
        "fetches newest first as Gmail lists them.",
    )
    first_scan_seed: int | None = Field(
        default=None,
        ge=0,
        description="Seed of a first scan's random order (default: a fresh one per scan, kept for its resume).",
    )
    http_timeout: float = Field(
        default=60.0,
        gt=0,
        description="Seconds before a Gmail request without an answer counts as failed (and is retried).",
    )

    @field_validator("account", mode="before")
    @classmethod
    def _account_name(cls, value: object) -> object:
        if value in ("", None, DEFAULT_ACCOUNT):
            return None
        return check_name(str(value))

    def db_file(self) -> Path:
        """The database of the chosen account."""
        return account_file(self.db, self.account)

    def tokens_file(self) -> Path:
        """The token cache of the chosen account."""
        return account_file(self.tokens, self.account)

    def effective_parse_workers(self) -> int:
        if self.parse_workers is not None:
            return self.parse_workers
        return min(os.cpu_count() or 1, 4)
