"""The scan's values: what to do (`ScanRequest`, `ScanTuning`), what happened (`ScanResult`), running counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingester.pacing import RetryPolicy
from shared.models import RunOutcome, RunState


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
