"""Small pure parts: the rate/ETA window, the one cache, Host parsing, settings parsing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from shared.runs import Run
from viewer.query.cache import SMALL_BYTES, SnapshotCache
from viewer.settings import ViewerSettings
from viewer.web.security import split_host
from viewer.web.status import Progress, RateTracker

RUN = Run(
    run_id=1, source="mbox", state="running", pid=1, started_at_unix=0, updated_at_unix=0, finished_at_unix=None,
    messages_seen=0, messages_new=0, messages_skipped=0, messages_excluded=0, total_estimate=None,
    bytes_total=1_000_000, bytes_done=0, resume_token=None, mbox_path=None, mbox_fingerprint=None, error_kind=None,
    error=None, auth_url=None, warnings_count=0, warnings_tail=(), outcome=None, launch_token=None,
)  # fmt: skip


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_import_rate_and_eta_come_from_bytes_after_the_first_look() -> None:
    clock = FakeClock()
    tracker = RateTracker(clock)
    assert tracker.observe(RUN).rate_per_sec is None  # the first look is no commit to measure from
    for step in range(1, 6):
        clock.now += 2
        progress = tracker.observe(replace(RUN, bytes_done=100_000 * step, messages_seen=200 * step))
    # Commits 2-5 (the first one after the look holds the start-up): 100 messages, 50 KB a second.
    assert (progress.rate_per_sec, progress.eta_seconds) == (100.0, 10.0)


def test_scan_eta_comes_from_messages_against_the_estimate_and_resets_per_run() -> None:
    clock = FakeClock()
    tracker = RateTracker(clock)
    scan = replace(RUN, source="gmail_api", bytes_total=None, total_estimate=10_000)
    tracker.observe(scan)
    for step in range(1, 6):
        clock.now += 2
        progress = tracker.observe(replace(scan, messages_seen=1000 * step))
    assert progress.eta_seconds == 10.0
    assert tracker.observe(replace(scan, run_id=2)).rate_per_sec is None
    assert tracker.observe(None).eta_seconds is None


def test_a_stalled_run_drops_its_eta_and_old_commits_leave_the_window() -> None:
    clock = FakeClock()
    tracker = RateTracker(clock)
    tracker.observe(RUN)
    for step in range(1, 40):
        clock.now += 2
        moving = replace(RUN, bytes_done=10_000 * step, messages_seen=100 * step)
        tracker.observe(moving)
    clock.now += 1
    assert tracker.observe(moving).rate_per_sec == 50.0
    clock.now += 60
    assert tracker.observe(moving) == Progress(0.0, None)


def test_the_cache_keeps_the_newest_generation_only_and_its_bytes_bounded() -> None:
    cache = SnapshotCache(max_bytes=3 * (SMALL_BYTES + 10))
    calls: list[str] = []

    def compute(value: str) -> Callable[[], str]:
        def run() -> str:
            calls.append(value)
            return value

        return run

    assert cache.get(("e", 1), "k", compute("a" * 10)) == "a" * 10
    assert cache.get(("e", 1), "k", compute("b" * 10)) == "a" * 10  # one generation: one answer
    assert cache.get(("e", 2), "k", compute("c" * 10)) == "c" * 10  # a commit: computed anew
    assert cache.get(("e", 1), "k", compute("d" * 10)) == "d" * 10  # an older reader: its own answer, not kept
    assert cache.get(("e", 2), "k", compute("x")) == "c" * 10
    assert cache.get(("other", 1), "k", compute("f" * 10)) == "f" * 10  # another file: a fresh start
    for key in "pqrs":
        cache.get(("other", 1), key, compute(key * 10))
    assert cache.size_bytes <= cache.max_bytes
    assert cache.get(("other", 1), "k", compute("g" * 10)) == "g" * 10  # least recently used: gone first
    assert cache.get(None, "k", compute("h")) == "h"  # no generation (an older schema): never kept
    assert cache.get(None, "k", compute("i")) == "i"
    assert calls == ["a" * 10, "c" * 10, "d" * 10, "f" * 10, "p" * 10, "q" * 10, "r" * 10, "s" * 10, "g" * 10, "h", "i"]


def test_an_older_readers_answer_may_ask_the_cache_again() -> None:
    """A page's answer nests the hidden senders' sums; for a reader still on an older generation both are computed
    uncached, and neither may wait on the other (this once hung every request of a viewer polled during an import)."""
    cache = SnapshotCache()
    cache.get(("e", 2), "k", lambda: "newest")
    answers: list[str] = []

    def read_older() -> None:
        answers.append(cache.get(("e", 1), "page", lambda: cache.get(("e", 1), "hidden", lambda: "sums") + "+page"))

    reader = threading.Thread(target=read_older, daemon=True)
    reader.start()
    reader.join(timeout=60)  # a bound on a hang, not a speed: the answer takes microseconds
    assert answers == ["sums+page"]
    assert cache.get(("e", 2), "k", lambda: "again") == "newest"


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("127.0.0.1:7878", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("[::1]:80", "[::1]"),
        ("[::1", None),
        ("localhost:", "localhost"),
        ("localhost:x", None),
        ("a:1:2", None),
        ("", None),
    ],
)
def test_split_host(host: str, name: str | None) -> None:
    assert split_host(host) == name


def test_allowed_hosts_from_a_comma_separated_environment_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GMAIL_STATS_ALLOWED_HOSTS", " Stats.Example ,, other.lan ")
    monkeypatch.setenv("GMAIL_STATS_VIEWER_PORT", "9000")
    settings = ViewerSettings(db=Path("x.db"))
    assert (settings.allowed_hosts, settings.viewer_port) == (("stats.example", "other.lan"), 9000)
