"""Live rate and ETA of the active run, from the commits the viewer has observed: `estimate` is the pure rule,
`RateTracker` keeps one run's commits and its last ETA between polls.

Imports progress in bytes (`bytes_done` of `bytes_total`); scans in settled messages (`messages_seen` of
`total_estimate`). An ingester commits every few seconds (an import per parsed segment of a few MB), so a rate
measured up to "now" saw-tooths between commits; here it is measured between commits, over a window that spans
several, and an ETA is given only once that rate is steady and never rises while the run advances.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from shared.runs import Run
from shared.schema.models import Source
from shared.timeutil import Clock

WINDOW_SECONDS = 30.0
# Steady means: this many intervals between commits after the first one that counted anything (start-up, the
# first segment and the process's warm-up are no rate), spanning at least STEADY_SECONDS, with the newest
# interval's rate within STEADY_FACTOR of the window's.
STEADY_INTERVALS = 3
STEADY_SECONDS = 5.0
STEADY_FACTOR = 2.0
# No commit for this many times the longest gap in the window (and at least STALL_SECONDS): the run is stalled.
STALL_FACTOR = 3.0
STALL_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Sample:
    """A commit as the viewer first saw it."""

    at: float
    messages: int
    units: int  # bytes for imports, messages for scans


@dataclass(frozen=True, slots=True)
class Progress:
    rate_per_sec: float | None  # messages per second
    eta_seconds: float | None


def estimate(commits: Sequence[Sample], *, total: int | None, now: float, previous_eta: float | None) -> Progress:
    """The rate and ETA at `now` from `commits` (oldest first): the changes of progress seen after the viewer's
    first look at the run. That first look is no commit to measure from: the interval into the first commit after
    it holds the ingester's start-up (or, for a viewer started mid-run, an unknown part of an interval).

    Invariants: no ETA until the rate is steady; the ETA counts down between commits and is never above
    `previous_eta` (the last one given; None before the first and after a stall); a stalled run has rate 0 and
    no ETA.
    """
    if len(commits) < 2:
        return Progress(None, None)
    first, last = commits[0], commits[-1]
    gaps = [b.at - a.at for a, b in pairwise(commits)]
    if now - last.at > max(STALL_FACTOR * max(gaps), STALL_SECONDS):
        return Progress(rate_per_sec=0.0, eta_seconds=None)
    span = last.at - first.at
    if span <= 0:
        return Progress(None, None)
    rate = (last.messages - first.messages) / span
    unit_rate = (last.units - first.units) / span
    shown_rate = round(max(rate, 0.0), 1)
    if not total or unit_rate <= 0:
        return Progress(shown_rate, None)
    if not _steady(commits, unit_rate):
        return Progress(shown_rate, previous_eta)  # held, not withdrawn: it only waits for a steady rate
    eta = max(0.0, (total - last.units) / unit_rate - (now - last.at))
    if previous_eta is not None:
        eta = min(eta, previous_eta)
    return Progress(rate_per_sec=shown_rate, eta_seconds=round(eta, 1))


def _steady(moving: Sequence[Sample], unit_rate: float) -> bool:
    if len(moving) < STEADY_INTERVALS + 1 or moving[-1].at - moving[0].at < STEADY_SECONDS:
        return False
    a, b = moving[-2], moving[-1]
    newest = (b.units - a.units) / (b.at - a.at) if b.at > a.at else 0.0
    return unit_rate / STEADY_FACTOR <= newest <= unit_rate * STEADY_FACTOR


class RateTracker:
    """Thread-safe; keeps the commits of one run at a time (the active one) and the last ETA it gave."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._run_id: int | None = None
        self._seen: tuple[int, int] | None = None  # (messages, units) at the last look
        self._commits: list[Sample] = []
        self._eta: float | None = None

    def observe(self, run: Run | None) -> Progress:
        if run is None:
            with self._lock:
                self._run_id = None  # whatever run comes next starts afresh
            return Progress(None, None)
        by_bytes = run.source == Source.MBOX and bool(run.bytes_total)
        units = run.bytes_done if by_bytes else run.messages_seen
        total = run.bytes_total if by_bytes else run.total_estimate
        seen = (run.messages_seen, units)
        now = self._clock()
        with self._lock:
            if self._run_id != run.run_id:  # the first look: no commit to measure from
                self._run_id, self._seen, self._commits, self._eta = run.run_id, seen, [], None
            elif seen != self._seen:
                self._seen = seen
                self._commits.append(Sample(now, *seen))
            commits = self._commits
            # The window, but never fewer commits than a steady rate needs.
            while len(commits) > STEADY_INTERVALS + 1 and now - commits[0].at > WINDOW_SECONDS:
                del commits[0]
            progress = estimate(commits, total=total, now=now, previous_eta=self._eta)
            self._eta = progress.eta_seconds
        return progress
