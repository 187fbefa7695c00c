"""`scan --backfill-message-ids`: fetch the Message-IDs that older scan rows lack, then collapse double counts.

Rows from Rust-era databases (and any scan row without one) get their Message-ID, and, when another counted row
of any source has the same Message-ID, that other row is uncounted once. Settled rows are remembered in
`backfill_checked`, so a second run (or a resume after a kill) does nothing twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from ingester.gmail.fetcher import ChunkOutcome, FetchCancelled, Fetcher, iter_done
from ingester.gmail.gmail import GmailAccess
from ingester.gmail.gmail_records import metadata_record
from ingester.gmail.pacing import QuotaPacer
from ingester.gmail.scan_store import (
    backfill_candidates,
    collapse_double_counts,
    count_backfill_candidates,
    fill_scan_row,
    mark_backfilled,
)
from ingester.gmail.scan_types import ScanTuning
from ingester.runs.lifecycle import ResumeHint, RunLifecycle
from ingester.runs.outcome import RunResult
from ingester.runs.report import Reporter
from shared.schema.models import Source
from shared.timeutil import Clock

ROUND = 500


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    launch_token: str | None = None


class _Backfill:
    """The work: rounds of candidates, fetched and settled; `tally.new` counts filled ids, `collapsed` merges."""

    def __init__(self, *, life: RunLifecycle, fetcher: Fetcher) -> None:
        self.life = life
        self.fetcher = fetcher
        self.collapsed = 0

    def run(self) -> None:
        after = 0
        while not self.life.cancel.is_set():
            with self.life.engine.connect() as conn:
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
        tally = self.life.tally
        with self.life.batch(warnings) as conn:
            for meta in outcome.messages:
                record = metadata_record(meta, now=self.life.clock(), warnings=warnings)
                mail_id = by_gmail.get(meta.gmail_id, meta.gmail_id)
                fill_scan_row(conn, record._replace(mail_id=mail_id))
                if record.rfc_message_id is None:
                    statuses[mail_id] = "none"
                    continue
                tally.new += 1
                self.collapsed += collapse_double_counts(
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
            tally.seen += len(statuses)
            tally.skipped += len(outcome.failed)
        self.life.reporter.progress(done=tally.seen, seen=tally.seen, new=tally.new)


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
    resume_hint: ResumeHint | None = None,
) -> RunResult:
    """Backfills missing Message-IDs as a normal run (`source='backfill'`); the caller holds the ingest lock.

    A backfill is never reopened: its settled rows are remembered, so running it again is its resume.
    """
    life = RunLifecycle(
        engine,
        source=Source.BACKFILL,
        reporter=reporter,
        cancel=cancel,
        clock=clock,
        launch_token=request.launch_token,
        resume_hint=resume_hint or (lambda _run_id: "gmail-stats scan --backfill-message-ids"),
    )
    with engine.connect() as conn:
        total = count_backfill_candidates(conn)
    life.create(total_estimate=total)

    def consent(url: str) -> None:
        life.awaiting_consent(url)
        on_consent_url(url)

    work: _Backfill | None = None
    with life.guard(heartbeat=True):
        fetcher: Fetcher | None = None
        if total:
            factory = access.connect(on_consent_url=consent, cancel=cancel)
            life.authorised()
            pacer = QuotaPacer(tuning.units_per_second, monotonic=time.monotonic, wait=cancel.wait)
            fetcher = Fetcher(factory, pacer=pacer, policy=tuning.retry, workers=tuning.workers, cancel=cancel)
        reporter.start(description="Backfilling Message-IDs", total=total, done=0)
        try:
            if fetcher is not None:
                work = _Backfill(life=life, fetcher=fetcher)
                work.run()
        finally:
            if fetcher is not None:
                fetcher.close()
        with life.batch() as conn:
            life.finish(conn, cancelled=cancel.is_set(), partial=life.tally.skipped > 0)
    collapsed = work.collapsed if work is not None else 0
    if collapsed:
        reporter.note(f"removed {collapsed:,} messages counted twice (by a scan and by an import)")
    return life.result(detail=f"{collapsed:,} double counts removed")
