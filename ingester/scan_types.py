"""The scan's values: what to do (`ScanRequest`, `ScanTuning`), what happened is a `lifecycle.RunResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingester.pacing import RetryPolicy


@dataclass(frozen=True, slots=True)
class ScanRequest:
    resume_run_id: int | None = None
    full: bool = False
    launch_token: str | None = None


@dataclass(frozen=True, slots=True)
class ScanTuning:
    units_per_second: float = 250.0
    workers: int = 3
    retry: RetryPolicy = field(default_factory=RetryPolicy)
