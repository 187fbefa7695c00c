"""The run lifecycle in-process on real SQLite files and real threads: heartbeat isolation, resume refusals."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import ProgrammingError

from ingester.records import MailRecord
from ingester.runs.heartbeat import Heartbeat
from ingester.runs.lifecycle import RunLifecycle
from ingester.runs.outcome import refuse_resume
from ingester.runs.report import QuietReporter
from ingester.store.store import count_batch
from shared.errors import RunNotFoundError
from shared.runs import create_run, finish_run, get_run
from shared.schema.models import RunOutcome, RunState, Source
from shared.timeutil import system_clock

BEAT_CLOCK_BASE = 2_000_000_000  # beats write updated_at values from here on; the main thread's stay below


_BUMP = "UPDATE ingest_runs SET messages_new = messages_new + 1, updated_at_unix = 1 WHERE run_id = :r"


class _Rollback(Exception):
    pass


def _record(i: int) -> MailRecord:
    return MailRecord(f"mid:{i}@x", f"{i}@x", None, f"s{i % 7}@example.com", "", 1_600_000_000, 10, "", False, False)


def test_fast_heartbeat_never_lands_inside_a_main_thread_transaction(migrated_engine: Engine) -> None:
    """The issue-8 regression: a beat on a shared connection committed half of the main thread's transactions."""
    with migrated_engine.begin() as conn:
        run_id = create_run(conn, source=Source.MBOX, pid=1, now=1)
    beats = itertools.count(BEAT_CLOCK_BASE)
    seen_beats: set[int] = set()
    committed = 0
    with Heartbeat(migrated_engine, run_id, clock=lambda: float(next(beats)), interval=0.001):
        for i in range(600):
            try:
                with migrated_engine.begin() as conn:
                    stamp = conn.execute(
                        text("SELECT updated_at_unix FROM ingest_runs WHERE run_id = :r"), {"r": run_id}
                    ).scalar_one()
                    if stamp >= BEAT_CLOCK_BASE:
                        seen_beats.add(stamp)
                    count_batch(conn, [_record(i)], source=Source.MBOX, run_id=run_id)
                    conn.execute(
                        text(_BUMP),
                        {"r": run_id},
                    )
                    if i % 3 == 2:
                        raise _Rollback  # a rolled-back transaction must leave no trace, whatever the beat did
                committed += 1
            except _Rollback:
                pass
        # Beats did land between the main thread's transactions (wait for one if the loop outran them all).
        deadline = threading.Event()
        for _ in range(200):
            with migrated_engine.connect() as conn:
                stamp = conn.execute(text("SELECT updated_at_unix FROM ingest_runs")).scalar_one()
            if stamp >= BEAT_CLOCK_BASE:
                seen_beats.add(stamp)
                break
            deadline.wait(0.05)
    assert seen_beats, "the heartbeat never wrote"
    with migrated_engine.connect() as conn:
        counted = conn.execute(text("SELECT count(*) FROM seen_mails")).scalar_one()
        total = conn.execute(text("SELECT coalesce(sum(mails_sent), 0) FROM senders")).scalar_one()
        new = conn.execute(text("SELECT messages_new FROM ingest_runs")).scalar_one()
        kept = {row[0] for row in conn.execute(text("SELECT mail_id FROM seen_mails"))}
    assert committed == 400
    assert (counted, total, new) == (committed, committed, committed)
    assert kept == {f"mid:{i}@x" for i in range(600) if i % 3 != 2}


def test_a_writer_engine_refuses_a_second_thread(migrated_engine: Engine) -> None:
    with migrated_engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    errors: list[BaseException] = []

    def use() -> None:
        try:
            with migrated_engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except ProgrammingError as exc:
            errors.append(exc)

    thread = threading.Thread(target=use)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "same thread" in str(errors[0])


def _run(engine: Engine, source: Source, *, state: RunState | None = None, mbox: str | None = None) -> int:
    with engine.begin() as conn:
        run_id = create_run(conn, source=source, pid=1, now=1, mbox_path=mbox)
        if state is not None:
            finish_run(conn, run_id, state=state, outcome=RunOutcome.COMPLETE, now=2)
    return run_id


@pytest.mark.parametrize(
    ("source", "state", "message"),
    [
        (Source.MBOX, RunState.DONE, "run 1 already finished (complete); there is nothing to resume"),
        (
            Source.GMAIL_API,
            RunState.CANCELLED,
            "run 1 is a Gmail scan, not an mbox import; continue it with `scan`",
        ),
        (
            Source.BACKFILL,
            RunState.CANCELLED,
            "run 1 is a Message-ID backfill, not an mbox import; continue it with `scan --backfill-message-ids` "
            "(running it again continues it)",
        ),
    ],
)
def test_refused_resume_says_why_and_changes_nothing(
    migrated_engine: Engine, source: Source, state: RunState, message: str
) -> None:
    run_id = _run(migrated_engine, source, state=state)
    with migrated_engine.connect() as conn:
        before = get_run(conn, run_id)
    life = RunLifecycle(
        migrated_engine,
        source=Source.MBOX,
        reporter=QuietReporter(),
        cancel=threading.Event(),
        clock=system_clock,
        launch_token=None,
        resume_hint=str,
    )
    with pytest.raises(RunNotFoundError) as caught:
        life.reopen(run_id)
    assert str(caught.value) == message
    assert caught.value.exit_code == 2
    with migrated_engine.connect() as conn:
        assert get_run(conn, run_id) == before


def test_unknown_run_is_refused() -> None:
    with pytest.raises(RunNotFoundError, match=r"^there is no run 9; see `gmail-stats runs`$"):
        refuse_resume(None, run_id=9, source=Source.GMAIL_API)


def test_every_source_has_a_summary(tmp_path: Path) -> None:
    from ingester.runs.outcome import RunResult

    for source in Source:
        result = RunResult(3, source, RunState.DONE, RunOutcome.COMPLETE, 5, 4, 1, 0, "cmd")
        assert result.summary().startswith("run 3 done/complete: 5 ")


@pytest.mark.parametrize(
    ("state", "seen", "new", "expected"),
    [
        (RunState.FAILED, 0, 0, "run 3 failed, nothing counted: 0 messages listed, 0 new, "),
        (RunState.CANCELLED, 500, 850, "run 3 cancelled/partial: 500 messages listed, 850 new (listed messages' "),
        (RunState.CANCELLED, 500, 400, "run 3 cancelled/partial: 500 messages listed, 400 new, "),
    ],
)
def test_a_scan_summary_never_reads_as_more_than_it_says(state: RunState, seen: int, new: int, expected: str) -> None:
    """The page says "nothing counted" too; a thread fetched whole settles messages not listed yet."""
    from ingester.runs.outcome import RunResult

    result = RunResult(3, Source.GMAIL_API, state, RunOutcome.PARTIAL, seen, new, 0, 0, "cmd")
    assert result.summary().startswith(expected)
