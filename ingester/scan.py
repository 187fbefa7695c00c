"""The Gmail scan: authorise, list (full or by history), fetch metadata in paced batches, count, keep the run honest.

Every committed batch carries the counters it covers; `resume_token` only advances past fully committed pages,
so a `kill -9` at any instant followed by `--resume` (or any later scan: dedupe is by Gmail id) stays exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from sqlalchemy import Engine

from ingester.fetcher import ChunkOutcome, FetchCancelled, Fetcher, iter_done
from ingester.gmail import (
    COST_GET_PROFILE,
    COST_HISTORY_LIST,
    COST_MESSAGES_LIST,
    GmailAccess,
    GmailClient,
    IdPage,
    Profile,
)
from ingester.gmail_records import record_from_meta
from ingester.lifecycle import ResumeHint, RunLifecycle, RunResult
from ingester.pacing import QuotaPacer
from ingester.report import Reporter
from ingester.scan_store import (
    HISTORY_ID_KEY,
    PENDING_HISTORY_ID_KEY,
    clear_retries,
    delete_sync_state,
    get_sync_state,
    pending_retries,
    record_retries,
    set_sync_state,
    unknown_ids,
)
from ingester.scan_types import ScanRequest, ScanTuning
from ingester.store import count_batch
from shared.errors import ErrorKind, GmailApiError
from shared.models import Source
from shared.timeutil import Clock


class _Scanner:
    def __init__(
        self,
        *,
        life: RunLifecycle,
        request: ScanRequest,
        access: GmailAccess,
        tuning: ScanTuning,
        on_consent_url: Callable[[str], None],
    ) -> None:
        self.life = life
        self.engine = life.engine
        self.request = request
        self.access = access
        self.tuning = tuning
        self.cancel = life.cancel
        self.on_consent_url = on_consent_url
        self.retries_pending = False
        self.mode = "full"
        self.fetcher: Fetcher | None = None

    def _start_run(self) -> str | None:
        """Creates or reopens the run; returns the page token to resume from (None for page one)."""
        if self.request.resume_run_id is None:
            self.life.create()
            return None
        return self.life.reopen(self.request.resume_run_id).resume_token

    def _consent_url(self, url: str) -> None:
        self.life.awaiting_consent(url)
        self.on_consent_url(url)

    def run(self) -> RunResult:
        resume_token = self._start_run()
        with self.life.guard(heartbeat=True):
            self._scan(resume_token)
        return self.life.result(detail=f"{self.mode} listing")

    def _scan(self, resume_token: str | None) -> None:
        life = self.life
        factory = self.access.connect(on_consent_url=self._consent_url, cancel=self.cancel)
        life.authorised()
        with self.engine.connect() as conn:
            history_id = None if self.request.full else get_sync_state(conn, HISTORY_ID_KEY)
            retry_ids = pending_retries(conn)
        pacer = QuotaPacer(self.tuning.units_per_second, monotonic=time.monotonic, wait=self.cancel.wait)
        fetcher = Fetcher(
            factory, pacer=pacer, policy=self.tuning.retry, workers=self.tuning.workers, cancel=self.cancel
        )
        self.fetcher = fetcher
        try:
            profile: Profile = fetcher.call(COST_GET_PROFILE, lambda c: c.get_profile(), what="users.getProfile")
            with life.batch(total_estimate=profile.messages_total) as conn:
                # A resumed listing skips page one, where mail that arrived since the first start sits: the
                # history id to keep is the one from before the first start, so the next scan replays from there.
                pending = get_sync_state(conn, PENDING_HISTORY_ID_KEY) if resume_token is not None else None
                start_history_id = pending or profile.history_id
                set_sync_state(conn, PENDING_HISTORY_ID_KEY, start_history_id)
            life.reporter.start(description="Scanning Gmail", total=profile.messages_total, done=life.tally.seen)
            self.retries_pending = bool(retry_ids)
            if retry_ids and not self._process(fetcher, retry_ids, count_seen=False):
                raise FetchCancelled()
            if resume_token is not None or history_id is None:
                self._full(fetcher, resume_token)
            else:
                self._incremental(fetcher, history_id)
        finally:
            fetcher.close()
            self._warn([])
        with life.batch(resume_token=None) as conn:
            left = pending_retries(conn)
            set_sync_state(conn, HISTORY_ID_KEY, start_history_id)
            delete_sync_state(conn, PENDING_HISTORY_ID_KEY)
            life.finish(conn, cancelled=False, partial=bool(left))

    def _list(self, fetcher: Fetcher, token: str | None) -> IdPage:
        return fetcher.call(COST_MESSAGES_LIST, lambda c: c.list_messages(page_token=token), what="messages.list")

    def _full(self, fetcher: Fetcher, token: str | None) -> None:
        self.mode = "full"
        try:
            page = self._list(fetcher, token)
        except GmailApiError as exc:
            if exc.kind != ErrorKind.BAD_PAGE_TOKEN:
                raise
            page = self._list(fetcher, None)  # an expired resume token: page one again, dedupe keeps counts exact
        while True:
            futures = self._submit(fetcher, page.ids)
            following = None
            if page.next_page_token is not None and not self.cancel.is_set():
                following = self._list(fetcher, page.next_page_token)  # overlaps with the workers' fetches
            if not self._collect(futures, seen=len(page.ids), resume_token=page.next_page_token):
                raise FetchCancelled()
            if following is None:
                if self.cancel.is_set():
                    raise FetchCancelled()
                return
            page = following

    def _incremental(self, fetcher: Fetcher, start: str) -> None:
        self.mode = "history"
        token: str | None = None
        while True:
            try:
                page = fetcher.call(
                    COST_HISTORY_LIST,
                    _history_page(start, token),
                    what="history.list",
                )
            except GmailApiError as exc:
                if exc.kind != ErrorKind.HISTORY_EXPIRED:
                    raise
                self._warn([f"Gmail's history since {start} has expired; listing the whole mailbox again"])
                self._full(fetcher, None)
                return
            if not self._process(fetcher, page.ids, count_seen=True):
                raise FetchCancelled()
            if page.next_page_token is None:
                return
            token = page.next_page_token

    # --- fetching and counting -------------------------------------------------------------------------------
    def _submit(self, fetcher: Fetcher, ids: Sequence[str]) -> list[Future[ChunkOutcome]]:
        with self.engine.begin() as conn:
            todo = unknown_ids(conn, ids)
            if self.retries_pending and len(todo) < len(ids):
                clear_retries(conn, set(ids) - set(todo))  # counted meanwhile (e.g. by an import)
        return fetcher.fetch(todo)

    def _process(self, fetcher: Fetcher, ids: Sequence[str], *, count_seen: bool) -> bool:
        return self._collect(self._submit(fetcher, ids), seen=len(ids) if count_seen else 0, resume_token=None)

    def _collect(self, futures: list[Future[ChunkOutcome]], *, seen: int, resume_token: str | None) -> bool:
        """Commits each batch as it completes; returns False when some ids were left unfetched (cancel)."""
        complete = True
        for outcome in iter_done(futures):
            complete = self._commit(outcome) and complete
        if complete:
            tally = self.life.tally
            tally.seen += seen
            values = {"resume_token": resume_token} if self.mode == "full" and resume_token else {}
            with self.life.batch(**values):
                pass
            self.life.reporter.progress(done=tally.seen, seen=tally.seen, new=tally.new)
        return complete

    def _commit(self, outcome: ChunkOutcome) -> bool:
        life, tally = self.life, self.life.tally
        records = []
        notes: list[str] = []  # odd headers: counted anyway, and said so
        now = self.life.clock()
        for meta in outcome.messages:
            record = record_from_meta(meta, now=now, warnings=notes)
            if record is None:
                tally.excluded += 1
            else:
                records.append(record)
        warnings = notes + [f"message {i} was deleted before it could be read; skipped" for i in outcome.gone]
        warnings += [
            f"message {i} could not be fetched ({reason}); the next scan retries it"
            for i, reason in outcome.failed.items()
        ]
        if self.fetcher is not None:
            warnings = self.fetcher.drain_warnings() + warnings
        tally.skipped += len(outcome.failed)
        with life.batch(warnings) as conn:
            tally.new += count_batch(conn, records, source=Source.GMAIL_API, run_id=life.run_id).new
            if self.retries_pending:
                clear_retries(conn, [m.gmail_id for m in outcome.messages] + list(outcome.gone))
            record_retries(conn, outcome.failed, run_id=life.run_id)
        return not outcome.unfinished

    def _warn(self, warnings: list[str]) -> None:
        if self.fetcher is not None:
            warnings = self.fetcher.drain_warnings() + warnings
        self.life.warn(warnings)


def _history_page(start: str, token: str | None) -> Callable[[GmailClient], IdPage]:
    def call(client: GmailClient) -> IdPage:
        return client.list_history(start_history_id=start, page_token=token)

    return call


def run_scan(
    *,
    engine: Engine,
    request: ScanRequest,
    access: GmailAccess,
    tuning: ScanTuning,
    reporter: Reporter,
    cancel: threading.Event,
    clock: Clock,
    on_consent_url: Callable[[str], None],
    resume_hint: ResumeHint | None = None,
) -> RunResult:
    """Scans the mailbox behind `access` into the database behind `engine` (the caller holds the ingest lock)."""
    life = RunLifecycle(
        engine,
        source=Source.GMAIL_API,
        reporter=reporter,
        cancel=cancel,
        clock=clock,
        launch_token=request.launch_token,
        resume_hint=resume_hint or (lambda run_id: f"gmail-stats scan --resume {run_id}"),
    )
    scanner = _Scanner(life=life, request=request, access=access, tuning=tuning, on_consent_url=on_consent_url)
    return scanner.run()
