"""The clock seam (orchestrators take a `Clock`; only entry points use `system_clock`) and date plausibility."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


def system_clock() -> float:
    return time.time()


def format_utc(unix: float) -> str:
    """`2026-12-02 06:40 UTC`: a moment as messages print it (the machine's zone may not be the reader's)."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(unix))


# Dates before 1971 are placeholders (`Thu Jan  1 00:00:00 1970` in separators) or misread two-digit years;
# mail more than a day in the future is a wrong clock. Either way the date is unknown, never 0 or negative.
EARLIEST_PLAUSIBLE_UNIX = 31_536_000  # 1971-01-01T00:00:00Z
FUTURE_SLACK_SECONDS = 86_400


def plausible_unix(value: int | None, *, now: float | None) -> int | None:
    """`value` when it can be a real mail date (from 1971 until a day after `now`), else None (unknown).

    Without `now` only the lower bound applies.
    """
    if value is None or value < EARLIEST_PLAUSIBLE_UNIX:
        return None
    if now is not None and value > now + FUTURE_SLACK_SECONDS:
        return None
    return value
