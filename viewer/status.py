"""Live rate and ETA of the active run, from a sliding window of the progress the viewer has observed.

Imports progress in bytes (`bytes_done` of `bytes_total`); scans in messages (`messages_seen` of `total_estimate`).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from shared.models import Source
from shared.runs import Run
from shared.timeutil import Clock

WINDOW_SECONDS = 30.0
# A rate from observations closer together than this is noise (the ingester commits about twice a second).
MIN_SPAN_SECONDS = 1.5


@dataclass(frozen=True, slots=True)
class Observation:
    at: float
    messages: int
    units: int  # bytes for imports, messages for scans


@dataclass(frozen=True, slots=True)
class Progress:
    rate_per_sec: float | None  # messages per second
    eta_seconds: float | None


class RateTracker:
    """Thread-safe; keeps the window of one run at a time (the active one)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._run_id: int | None = None
        self._window: deque[Observation] = deque()

    def observe(self, run: Run | None) -> Progress:
        if run is None:
            with self._lock:
                self._run_id, self._window = None, deque()
            return Progress(None, None)
        by_bytes = run.source == Source.MBOX and bool(run.bytes_total)
        units = run.bytes_done if by_bytes else run.messages_seen
        total = run.bytes_total if by_bytes else run.total_estimate
        now = self._clock()
        with self._lock:
            if self._run_id != run.run_id:
                self._run_id, self._window = run.run_id, deque()
            window = self._window
            if not window or (window[-1].messages, window[-1].units) != (run.messages_seen, units):
                window.append(Observation(now, run.messages_seen, units))
            while len(window) > 2 and now - window[0].at > WINDOW_SECONDS:
                window.popleft()
            first, last = window[0], window[-1]
        span = now - first.at
        if now - last.at > WINDOW_SECONDS:
            return Progress(rate_per_sec=0.0, eta_seconds=None)  # no progress for a whole window
        if len(window) < 2 or span < MIN_SPAN_SECONDS:
            return Progress(None, None)
        # Measured up to now, not to the last change: a stalled run's rate decays instead of freezing.
        rate = (last.messages - first.messages) / span
        unit_rate = (last.units - first.units) / span
        eta = None
        if total and unit_rate > 0:
            eta = max(0.0, (total - last.units) / unit_rate)
        return Progress(rate_per_sec=round(max(rate, 0.0), 1), eta_seconds=None if eta is None else round(eta, 1))
