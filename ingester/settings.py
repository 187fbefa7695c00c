"""The ingester's one settings object, built in `cli.main` (flags given on the command line override it)."""

from __future__ import annotations

from shared.settings import CommonSettings


class IngesterSettings(CommonSettings):
    """Environment: `GMAIL_STATS_DB` (shared with the viewer)."""
