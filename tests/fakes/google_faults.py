"""What the fake Google breaks on purpose: injected faults, the batch gate that holds a scan mid-flight, and the
per-user quota as a token bucket in units/s. Only state and decisions; the fake Google (google.py) applies them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


class BatchGate:
    """Holds batch requests so a test can act while a scan is certainly mid-flight, whatever the machine's speed.

    `hold_after(n)` lets `n` more batches through, then makes each later one wait, unanswered, until `release()`;
    `holding()` says whether one is waiting now (the scan is inside a fetch, with more to come).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._budget: int | None = None  # None: open
        self._waiting = 0

    def hold_after(self, batches: int) -> None:
        with self._cond:
            self._budget = batches

    def release(self) -> None:
        with self._cond:
            self._budget = None
            self._cond.notify_all()

    def holding(self) -> bool:
        with self._cond:
            return self._waiting > 0

    def pass_through(self) -> None:
        """Called by each batch before it is answered."""
        with self._cond:
            if self._budget is None:
                return
            if self._budget > 0:
                self._budget -= 1
                return
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._budget is None)
            finally:
                self._waiting -= 1


@dataclass(slots=True)
class Faults:
    """What to break. Rates are probabilities per Gmail call (each call inside a batch counts)."""

    error_5xx_rate: float = 0.0
    storm_429_rate: float = 0.0
    retry_after_seconds: float | None = None  # add "Retry after <time>" to 429 messages
    drop_batch_rate: float = 0.0  # close the connection without answering a batch
    stall_seconds: float = 0.0  # with stall_rate: answer a batch only after this long (client timeouts)
    stall_rate: float = 0.0
    deleted: set[str] = field(default_factory=set)  # listed, but messages.get answers 404
    always_fail: set[str] = field(default_factory=set)  # messages.get (and threads.get of its thread) answer 500
    trashed: set[str] = field(default_factory=set)  # listed, but moved to Trash before it is fetched
    history_expired: bool = False
    consent: str = "approve"  # or "deny", "policy_enforced"
    list_delay_seconds: float = 0.0
    # When set, messages.list and history.list of the first mailbox wait for it (a run that lasts until released).
    first_box_gate: threading.Event | None = None
    next_429: int = 0  # the next N Gmail calls answer 429 whatever the quota
    gate: BatchGate = field(default_factory=BatchGate)  # batches held until released


class TokenBucket:
    """Gmail's per-user quota: `rate` units/s refill a bucket of `capacity`; a call takes its cost or is refused."""

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self, units: int) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= units:
                self.tokens -= units
                return True
            return False
