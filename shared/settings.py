"""Settings common to both services; each service subclasses `CommonSettings` once and builds it in its entry point."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.resume import CommandStyle


class CommonSettings(BaseSettings):
    """Read from `GMAIL_STATS_*` environment variables; command-line flags override by passing only given flags."""

    model_config = SettingsConfigDict(env_prefix="GMAIL_STATS_", extra="ignore", frozen=True)

    db: Path = Field(
        default=Path("./stats.db"),
        description="SQLite database file. The ingester creates it; the viewer only reads it.",
    )
    command_style: CommandStyle = Field(
        default=CommandStyle.CLI,
        description="How the commands you are shown (printed resume hints, the page's terminal commands) are "
        "written: `cli` (gmail-stats ...) or `make` (make import MBOX=... RESUME=N, what works on a Docker host; "
        "compose sets it).",
    )
    host_import_dir: str | None = Field(
        default=None,
        description="The import folder as the host names it (compose and the viewer's runners set it): the page's "
        "terminal commands and a launched import's resume hint name it instead of the container's /imports.",
    )


def shown_default(settings: type[CommonSettings], name: str) -> str:
    """A setting's default as `--help` and docs/reference.md show it (relative paths keep their `./`)."""
    value = settings.model_fields[name].default
    if value is None:
        return "unset"
    if isinstance(value, Path):
        text = value.as_posix()
        return text if value.is_absolute() or text.startswith(".") else f"./{text}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ", ".join(str(part) for part in value) or "none"
    return str(value)


def flag_help(settings: type[CommonSettings], name: str, what: str) -> str:
    """Help of a flag that overrides setting `name`: what it is, its variable and the settings' own default."""
    return f"{what} (env GMAIL_STATS_{name.upper()}, default {shown_default(settings, name)})"
