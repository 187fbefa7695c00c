"""The viewer's one settings object, built in `viewer.__main__.main` (command-line flags override the environment)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from shared.settings import CommonSettings


class ViewerSettings(CommonSettings):
    """Environment: `GMAIL_STATS_*`; see the README's settings table (a test keeps the two in step)."""

    viewer_host: str = Field(
        default="127.0.0.1",
        description="Address the viewer listens on. Keep the loopback address unless a proxy publishes it.",
    )
    viewer_port: int = Field(default=7878, ge=1, le=65535, description="TCP port the viewer listens on.")
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Extra Host names the viewer answers to, comma-separated (loopback names are always allowed).",
    )
    import_dir: Path = Field(
        default=Path("./imports"),
        description="Folder whose .mbox files the page offers for import; the only files the viewer lists.",
    )
    launcher: Literal["process", "docker"] = Field(
        default="process",
        description="How the viewer starts ingesters: `process` (child processes) or `docker` (one-shot containers).",
    )
    ingest_bin: Path | None = Field(
        default=None,
        description="The `gmail-stats` executable the process launcher runs (default: the one beside the viewer).",
    )
    cancel_grace_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a cancelled ingester gets after SIGTERM before it is killed.",
    )
    run_row_wait_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a launch waits for the new ingester's run row before answering.",
    )
    refresh_check_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How often the viewer looks whether an account's refresh (hourly or daily) is due.",
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return tuple(str(part).strip().lower() for part in value if str(part).strip())
        return value
