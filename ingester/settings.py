"""The ingester's one settings object, built in `cli.main` (flags given on the command line override it)."""

from __future__ import annotations

import os

from pydantic import Field

from shared.settings import CommonSettings


class IngesterSettings(CommonSettings):
    """Environment: `GMAIL_STATS_DB` (shared with the viewer) and the launcher's token."""

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

    def effective_parse_workers(self) -> int:
        if self.parse_workers is not None:
            return self.parse_workers
        return min(os.cpu_count() or 1, 4)
