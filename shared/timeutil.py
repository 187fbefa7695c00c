"""The clock seam: orchestrators take a `Clock` so tests can control time; only entry points use `system_clock`."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


def system_clock() -> float:
    return time.time()
