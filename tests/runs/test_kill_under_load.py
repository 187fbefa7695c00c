"""kill -9 at random points of an import, a scan (fake Google server) and a backfill while another process keeps a
core busy; every resume ends with exact counts. Load makes the heartbeat and the work interleave unpredictably."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, query
from tests.support.processes import (
    backfill_checked,
    kill_when,
    parse_workers_alive,
    start_import,
    wait_for_progress,
    wait_until,
)
from tests.support.scan import double_counted_rust_database, fake_google, last_run, runs, sender_counts

pytestmark = pytest.mark.slow


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """A busy loop for the whole test, competing with the ingester's threads and processes for the CPU."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def test_import_killed_twice_at_random_points_then_resumed(tmp_path: Path, cpu_load: None) -> None:
    mbox = tmp_path / "takeout.mbox"
    expected = write_mbox(mbox, generate_messages(count=30_000, body_bytes=1200, senders=400, spam_every=40))
    db = tmp_path / "stats.db"
    size = mbox.stat().st_size
    rng = random.Random(801)
    resume: list[str] = []
    for _ in range(2):
        process = start_import(db, mbox, *resume, GMAIL_STATS_PARSE_WORKERS="2")
        wait_for_progress(db, process, at_least=rng.randint(size // 10, size * 7 // 10) if not resume else 1)
        time.sleep(rng.random() * 0.2)
        process.kill()
        process.communicate()
        resume = ["--resume", "1"]
        assert wait_until(lambda: not parse_workers_alive()), "parse workers outlived their killed parent"
    final = start_import(db, mbox, *resume)
    _, stderr = final.communicate(timeout=300)
    assert final.returncode == 0, stderr
    assert counts_of(db) == expected
    assert query(db, "SELECT run_id, state, outcome FROM ingest_runs") == [(1, "done", "complete")]


def test_scan_killed_at_a_random_point_then_resumed(tmp_path: Path, cpu_load: None) -> None:
    rng = random.Random(802)
    with fake_google(tmp_path, 1500, quota=600) as g:
        process = g.popen(GMAIL_STATS_QUOTA_UNITS_PER_SEC="600")
        at_least = rng.randint(100, 1000)
        kill_when(
            process,
            lambda: (run := last_run(g.db)) is not None and int(run["messages_new"]) >= at_least,
            what=f"{at_least} messages counted",
            then=rng.random() * 0.3,
        )
        g.google.bucket = None
        result = g.scan("--resume", "1", timeout=300)
        assert result.returncode == 0, result.stderr
        final = runs(g.db)
        assert [(r["run_id"], r["state"], r["outcome"]) for r in final] == [(1, "done", "complete")]
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()


def test_backfill_killed_at_a_random_point_then_run_again(tmp_path: Path, cpu_load: None) -> None:
    rng = random.Random(803)
    with fake_google(tmp_path, 1200, quota=600) as g:
        double_counted_rust_database(g, tmp_path)
        process = g.popen("--backfill-message-ids", GMAIL_STATS_QUOTA_UNITS_PER_SEC="600")
        at_least = rng.randint(50, 700)
        kill_when(
            process, lambda: backfill_checked(g.db) >= at_least, what="part of the backfill", then=rng.random() * 0.3
        )
        g.google.bucket = None
        again = g.scan("--backfill-message-ids", timeout=300)
        assert again.returncode == 0, again.stderr
        assert runs(g.db)[-1]["state"] == "done"
        assert sender_counts(g.db) == g.google.mailbox.expected_counts()
        assert query(g.db, "PRAGMA integrity_check") == [("ok",)]
