"""The launcher seam: how the viewer starts, cancels and inspects one-shot ingesters.

Implementations: `launch_process` (child processes) and `runner_launcher` (containers, through `launch_docker`,
the only Docker SDK user).
A launcher never takes an image, mount, argv or environment from a request: only a `LaunchRequest`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shared.launch_request import LaunchRequest

LOG_TAIL_LINES = 200


@dataclass(frozen=True, slots=True)
class Launched:
    """A running ingester this viewer owns: `handle` is a PID or a runner's `NAME@STARTED_AT`."""

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

    def close(self) -> None:
        """Lets go of what the launcher holds when the viewer stops; ingesters still running go on."""
        ...
