"""`scan --backfill-message-ids`: fetch the Message-IDs that older scan rows lack, then collapse double counts.

Rows from Rust-era databases (and any scan row without one) get their Message-ID, and, when another counted row
of any source has the same Message-ID, that other row is uncounted once. Settled rows are remembered in
`backfill_checked`, so a second run (or a resume after a kill) does nothing twice.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from ingester.fetcher import ChunkOutcome, FetchCancelled, Fetcher, iter_done
from ingester.gmail import AuthCancelled, GmailAccess
from ingester.gmail_records import metadata_record
from ingester.heartbeat import Heartbeat
from ingester.pacing import QuotaPacer
from ingester.report import Reporter
from ingester.scan_store import (
    backfill_candidates,
    collapse_double_counts,
    count_backfill_candidates,
    fill_scan_row,
    mark_backfilled,
)
from ingester.scan_types import ScanTuning
from shared.errors import ErrorKind, GmailApiError, GmailAuthError
from shared.models import RunOutcome, RunState, Source
from shared.runs import add_warnings, create_run, finish_run, update_run
from shared.timeutil import Clock

ROUND = 500


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    launch_token: str | None = None


@dataclass(frozen=True, slots=True)
class BackfillResult:
    run_id: int
    state: RunState
    outcome: RunOutcome
    messages_seen: int
    messages_new: int
    messages_skipped: int
    collapsed: int

    def resume_hint(self) -> str:
        return "gmail-stats scan --backfill-message-ids"

    def summary(self) -> str:
        return (
            f"run {self.run_id} {self.state}/{self.outcome}: {self.messages_seen:,} scan rows checked, "
            f"{self.messages_new:,} Message-IDs filled, {self.collapsed:,} double counts removed, "
            f"{self.messages_skipped:,} not fetched"
        )


@dataclass(slots=True)
class _Tally:
    seen: int = 0
    filled: int = 0
    skipped: int = 0
    collapsed: int = 0


class _Backfill:
    def __init__(self, *, engine: Engine, run_id: int, fetcher: Fetcher, reporter: Reporter, clock: Clock) -> None:
        self.engine = engine
        self.run_id = run_id
        self.fetcher = fetcher
        self.reporter = reporter
        self.clock = clock
        self.tally = _Tally()

    def run(self, cancel: threading.Event) -> None:
        after = 0
        while not cancel.is_set():
            with self.engine.connect() as conn:
                rows = backfill_candidates(conn, after_row=after, limit=ROUND)
            if not rows:
                return
            after = rows[-1].row_id
            by_gmail = {row.gmail_id: row.mail_id for row in rows}
            for outcome in iter_done(self.fetcher.fetch(list(by_gmail))):
                self._commit(outcome, by_gmail)
                if outcome.unfinished:
                    raise FetchCancelled()

    def _commit(self, outcome: ChunkOutcome, by_gmail: dict[str, str]) -> None:
        statuses: dict[str, str] = {}
        warnings = self.fetcher.drain_warnings()
        with self.engine.begin() as conn:
            for meta in outcome.messages:
                record = metadata_record(meta, now=self.clock(), warnings=warnings)
                mail_id = by_gmail.get(meta.gmail_id, meta.gmail_id)
                fill_scan_row(conn, record._replace(mail_id=mail_id))
                if record.rfc_message_id is None:
                    statuses[mail_id] = "none"
                    continue
                self.tally.filled += 1
                self.tally.collapsed += collapse_double_counts(
                    conn, keep_mail_id=mail_id, rfc_message_id=record.rfc_message_id
                )
                statuses[mail_id] = "found"
            for gmail_id in outcome.gone:
                statuses[by_gmail.get(gmail_id, gmail_id)] = "gone"
                warnings.append(f"message {gmail_id} no longer exists in Gmail; its Message-ID stays unknown")
            warnings += [
                f"message {i} could not be fetched ({why}); run the backfill again" for i, why in outcome.failed.items()
            ]
            mark_backfilled(conn, statuses)
            self.tally.seen += len(statuses)
            self.tally.skipped += len(outcome.failed)
            add_warnings(conn, self.run_id, warnings)
            update_run(
                conn,
                self.run_id,
                now=self.clock(),
                messages_seen=self.tally.seen,
                messages_new=self.tally.filled,
                messages_skipped=self.tally.skipped,
            )
        for text in warnings:
            self.reporter.warning(text)
        self.reporter.progress(done=self.tally.seen, seen=self.tally.seen, new=self.tally.filled)


def run_backfill(
    *,
    engine: Engine,
    request: BackfillRequest,
    access: GmailAccess,
    tuning: ScanTuning,
    reporter: Reporter,
    cancel: threading.Event,
    clock: Clock,
    on_consent_url: Callable[[str], None],
) -> BackfillResult:
    """Backfills missing Message-IDs as a normal run (`source='backfill'`); the caller holds the ingest lock."""
    with engine.begin() as conn:
        total = count_backfill_candidates(conn)
        run_id = create_run(
            conn, source=Source.BACKFILL, pid=os.getpid(), now=clock(), launch_token=request.launch_token
        )
        update_run(conn, run_id, now=clock(), total_estimate=total)

    def consent(url: str) -> None:
        with engine.begin() as conn:
            update_run(conn, run_id, now=clock(), state=str(RunState.AWAITING_AUTH), auth_url=url)
        on_consent_url(url)

    def finish(state: RunState, outcome: RunOutcome, kind: str | None = None, error: str | None = None) -> None:
        with engine.begin() as conn:
            finish_run(conn, run_id, state=state, outcome=outcome, now=clock(), error_kind=kind, error=error)

    work: _Backfill | None = None
    state, outcome = RunState.CANCELLED, RunOutcome.PARTIAL
    with Heartbeat(engine, run_id, clock=clock):
        try:
            fetcher: Fetcher | None = None
            if total:
                factory = access.connect(on_consent_url=consent, cancel=cancel)
                with engine.begin() as conn:
                    update_run(conn, run_id, now=clock(), state=str(RunState.RUNNING), auth_url=None)
                pacer = QuotaPacer(tuning.units_per_second, monotonic=time.monotonic, wait=cancel.wait)
                fetcher = Fetcher(factory, pacer=pacer, policy=tuning.retry, workers=tuning.workers, cancel=cancel)
            reporter.start(description="Backfilling Message-IDs", total=total, done=0)
            try:
                if fetcher is not None:
                    work = _Backfill(engine=engine, run_id=run_id, fetcher=fetcher, reporter=reporter, clock=clock)
                    work.run(cancel)
            finally:
                if fetcher is not None:
                    fetcher.close()
                reporter.finish()
            if not cancel.is_set():
                state = RunState.DONE
                outcome = RunOutcome.PARTIAL if work is not None and work.tally.skipped else RunOutcome.COMPLETE
            finish(state, outcome)
        except (FetchCancelled, AuthCancelled):
            finish(RunState.CANCELLED, RunOutcome.PARTIAL)
        except GmailAuthError as exc:
            finish(RunState.FAILED, RunOutcome.PARTIAL, exc.kind, str(exc))
            raise
        except GmailApiError as exc:
            kind = ErrorKind.RATE_LIMITED if exc.kind == ErrorKind.RATE_LIMITED else ErrorKind.GMAIL_API
            finish(RunState.FAILED, RunOutcome.PARTIAL, kind, str(exc))
            raise GmailApiError(str(exc), kind=kind, status=exc.status) from exc
    tally = work.tally if work is not None else _Tally()
    if work is not None and tally.collapsed:
        reporter.note(f"removed {tally.collapsed:,} messages counted twice (by a scan and by an import)")
    final_state = RunState.DONE if state == RunState.DONE else RunState.CANCELLED
    return BackfillResult(run_id, final_state, outcome, tally.seen, tally.filled, tally.skipped, tally.collapsed)
