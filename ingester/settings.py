"""The ingester's one settings object, built in `cli.main` (flags given on the command line override it)."""

from __future__ import annotations

from pydantic import Field

from shared.settings import CommonSettings


class IngesterSettings(CommonSettings):
    """Environment: `GMAIL_STATS_DB` (shared with the viewer) and the launcher's token."""

    launch_token: str | None = Field(
        default=None,
        description="Set by the viewer when it launches an ingester; stored on the run row so it finds its run.",
    )
