"""The tests' polling helpers: wait for a condition with a generous bound, never a blind sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from viewer.launch.launcher import Launched, Launcher

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], *, timeout: float = 60.0, what: str = "", interval: float = 0.05) -> T:
    """Calls `probe` until it returns something truthy and returns that; raises AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or probe}")
        time.sleep(interval)


def wait_stopped(launcher: Launcher, launched: Launched, *, timeout: float) -> None:
    """Waits until `launched` no longer runs (its process or container exited); AssertionError after `timeout` s."""
    wait_for(lambda: not launcher.is_alive(launched), timeout=timeout, what=f"{launched.handle} to stop", interval=0.2)
