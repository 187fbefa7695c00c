"""Settings common to both services; each service subclasses `CommonSettings` once and builds it in its entry point."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class CommonSettings(BaseSettings):
    """Read from `GMAIL_STATS_*` environment variables; command-line flags override by passing only given flags."""

    model_config = SettingsConfigDict(env_prefix="GMAIL_STATS_", extra="ignore", frozen=True)

    db: Path = Field(
        default=Path("./stats.db"),
        description="SQLite database file. The ingester creates it; the viewer only reads it.",
    )
