"""The scan's values: what to do (`ScanRequest`, `ScanTuning`), what happened is an `outcome.RunResult`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ingester.gmail.pacing import RetryPolicy

if TYPE_CHECKING:
    from ingester.settings import IngesterSettings


@dataclass(frozen=True, slots=True)
class ScanRequest:
    resume_run_id: int | None = None
    full: bool = False
    launch_token: str | None = None


@dataclass(frozen=True, slots=True)
class ScanTuning:
    """Pacing, workers and retries of a scan; `ingester.cli` builds it from the settings, which own the defaults."""

    units_per_second: float
    workers: int
    retry: RetryPolicy
    # A first full scan (no scan completed yet) lists every id, then fetches threads in a seeded random order.
    random_first_scan: bool = True
    order_seed: int | None = None  # None: a fresh seed per first scan (kept in `scan_sample` for its resume)

    @classmethod
    def from_settings(cls, settings: IngesterSettings) -> ScanTuning:
        retry = RetryPolicy(attempts=settings.retry_attempts, base_seconds=settings.retry_base_seconds)
        return cls(
            units_per_second=settings.quota_units_per_sec,
            workers=settings.scan_workers,
            retry=retry,
            random_first_scan=settings.first_scan_order == "random",
            order_seed=settings.first_scan_seed,
        )
