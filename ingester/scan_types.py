"""The scan's values: what to do (`ScanRequest`, `ScanTuning`), what happened (`ScanResult`), running counters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ingester.pacing import RetryPolicy
from shared.models import RunOutcome, RunState

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

    @classmethod
    def from_settings(cls, settings: IngesterSettings) -> ScanTuning:
        retry = RetryPolicy(attempts=settings.retry_attempts, base_seconds=settings.retry_base_seconds)
        return cls(units_per_second=settings.quota_units_per_sec, workers=settings.scan_workers, retry=retry)


@dataclass(frozen=True, slots=True)
class ScanResult:
    run_id: int
    state: RunState
    outcome: RunOutcome
    mode: str
    messages_seen: int
    messages_new: int
    messages_skipped: int
    messages_excluded: int

    def resume_hint(self) -> str:
        return f"gmail-stats scan --resume {self.run_id}"

    def summary(self) -> str:
        return (
            f"run {self.run_id} {self.state}/{self.outcome} ({self.mode} listing): {self.messages_seen:,} messages "
            f"listed, {self.messages_new:,} new, {self.messages_excluded:,} excluded (spam/trash/chat), "
            f"{self.messages_skipped:,} not fetched"
        )


@dataclass(slots=True)
class Tally:
    seen: int = 0
    new: int = 0
    skipped: int = 0
    excluded: int = 0
