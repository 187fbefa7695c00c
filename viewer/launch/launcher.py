"""The launcher seam: how the viewer starts, cancels and inspects one-shot ingesters.

Implementations: `launch_process` (child processes) and `runner_launcher` (containers, through `launch_docker`,
the only Docker SDK user).
A launcher never takes an image, mount, argv or environment from a request: only a `LaunchRequest`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from shared.accounts import DEFAULT_ACCOUNT
from viewer.settings import ViewerSettings

# The settings own the grace period (GMAIL_STATS_CANCEL_GRACE_SECONDS); this name stays for runner_launcher's default.
CANCEL_GRACE_SECONDS: float = ViewerSettings.model_fields["cancel_grace_seconds"].default
LOG_TAIL_LINES = 200


class LaunchCommand(StrEnum):
    SCAN = "scan"
    IMPORT = "import"
    ACCOUNT = "account"  # `gmail-stats account --refresh …/--address …`: the viewer never writes settings itself


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What to run. `import_path` is relative to the import folder; `launch_token` (random, one per request) goes to
    the ingester as `GMAIL_STATS_LAUNCH_TOKEN` and comes back on its run row (`shared.runs.run_by_launch_token`)."""

    command: LaunchCommand
    launch_token: str = field(default_factory=lambda: secrets.token_hex(16))
    import_path: str | None = None
    resume_run_id: int | None = None
    account: str = DEFAULT_ACCOUNT  # the ingester's `--account` (a name checked by `shared.accounts`)
    unattended: bool = False  # a scan nobody watches (a scheduled refresh): `--unattended`, never a consent wait
    refresh: str | None = None  # ACCOUNT: the new refresh interval
    address: str | None = None  # ACCOUNT: the Gmail address typed for a Takeout-only account


@dataclass(frozen=True, slots=True)
class Launched:
    """A running ingester this viewer owns: `handle` is a PID or a container id."""

    handle: str
    launch_token: str


class LaunchError(Exception):
    """The ingester could not be started at all (`spawn_failed`); `hint` says what to check."""

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


class Launcher(Protocol):
    def launch(self, request: LaunchRequest) -> Launched:
        """Starts the ingester with a fixed argv (`--quiet`, stdin closed); raises `LaunchError`."""
        ...

    def is_alive(self, launched: Launched) -> bool: ...

    def cancel(self, launched: Launched, *, grace_seconds: float) -> None:
        """Sends SIGTERM now and SIGKILL after the grace period if still alive; returns without waiting."""
        ...

    def log_tail(self, launched: Launched, *, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last stderr/stdout lines of the ingester."""
        ...

    def adopt(self) -> list[Launched]:
        """Ingesters still running from before this viewer started that it can own again (Docker: by label)."""
        ...

    def reap(self) -> None:
        """Forgets (and for Docker removes) finished ingesters whose outcome is on their run row."""
        ...

    def consent_listener(self, launched: Launched | None, *, redirect_port: int) -> tuple[str, int]:
        """Host and port where the viewer reaches a scan's consent listener (`redirect_port` is its redirect's
        port; `launched` the scan's when this viewer started it); raises `LaunchError` when it cannot."""
        ...
