"""Quota pacing and retry timing for Gmail calls: a shared units/s schedule and exponential backoff with jitter.

Pure timing: no HTTP. Thread-safe, because every worker paces against the same per-user quota.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

# After a 429 the pace halves (never below this share of the ceiling) and climbs back over `RECOVERY_SECONDS`;
# the 429s of one burst (many calls of a batch, several workers) count as one.
FLOOR_SHARE = 0.1
RECOVERY_SECONDS = 5.0
THROTTLE_DEBOUNCE_SECONDS = 1.0
# Pace at this share of the configured ceiling. At exactly 100 % a server bucket of the same rate is always empty,
# so the slightest jitter in arrival times draws a 429 (and a halved pace); 5 % headroom refills it.
HEADROOM = 0.95
# Never wait longer than this for a single "Retry after" from Google; the retry budget decides the rest.
MAX_RETRY_AFTER_SECONDS = 60.0


class QuotaPacer:
    """Schedules calls back to back at `rate` units/s (virtual scheduling, no burst).

    A client that never bursts cannot exceed a server bucket of the same rate whose capacity holds one batch,
    so at the ceiling Gmail answers without 429s while the schedule stays full.
    """

    def __init__(
        self,
        units_per_second: float,
        *,
        monotonic: Callable[[], float],
        wait: Callable[[float], bool],
    ) -> None:
        """`wait(seconds)` sleeps and returns True when cancelled (an `Event.wait`)."""
        if units_per_second <= 0:
            raise ValueError("units_per_second must be positive")
        self.configured = float(units_per_second)
        self.ceiling = self.configured * HEADROOM
        self._monotonic = monotonic
        self._wait = wait
        self._lock = threading.Lock()
        self._next_free = monotonic()
        self._throttled_rate: float | None = None
        self._throttled_at = 0.0
        self._hold_until = 0.0

    def rate(self) -> float:
        with self._lock:
            return self._rate_locked(self._monotonic())

    def _rate_locked(self, now: float) -> float:
        if self._throttled_rate is None:
            return self.ceiling
        progress = (now - self._throttled_at) / RECOVERY_SECONDS
        if progress >= 1:
            self._throttled_rate = None
            return self.ceiling
        return self._throttled_rate + (self.ceiling - self._throttled_rate) * progress

    def acquire(self, units: int) -> bool:
        """Blocks until `units` may be spent; returns True when cancelled while waiting."""
        with self._lock:
            now = self._monotonic()
            start = max(now, self._next_free, self._hold_until)
            self._next_free = start + units / self._rate_locked(now)
        delay = start - now
        return delay > 0 and self._wait(delay)

    def throttled(self) -> None:
        """Gmail answered 429: halve the pace (it recovers linearly afterwards)."""
        with self._lock:
            now = self._monotonic()
            if self._throttled_rate is not None and now - self._throttled_at < THROTTLE_DEBOUNCE_SECONDS:
                return
            current = self._rate_locked(now)
            self._throttled_rate = max(self.ceiling * FLOOR_SHARE, current / 2)
            self._throttled_at = now

    def hold(self, seconds: float) -> None:
        """Google said "Retry after …": no call starts before then (bounded by `MAX_RETRY_AFTER_SECONDS`)."""
        with self._lock:
            until = self._monotonic() + min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
            self._hold_until = max(self._hold_until, until)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts per call and the full-jitter exponential backoff between them (AWS architecture blog)."""

    attempts: int  # GMAIL_STATS_RETRY_ATTEMPTS: the settings own the defaults
    base_seconds: float  # GMAIL_STATS_RETRY_BASE_SECONDS
    cap_seconds: float = 8.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        ceiling = min(self.cap_seconds, self.base_seconds * 2.0 ** (attempt - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)
