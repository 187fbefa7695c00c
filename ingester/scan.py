"""The Gmail scan: authorise, list (full or by history), fetch metadata in paced batches, count, keep the run honest.

Every committed batch carries the counters it covers; `resume_token` only advances past fully committed pages,
so a `kill -9` at any instant followed by `--resume` (or any later scan: dedupe is by Gmail id, and `scan_settled`
remembers what the run fetched without keeping a row) stays exact. Fetching and counting live in `scan_settle`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from ingester.fetcher import FetchCancelled, Fetcher
from ingester.gmail import (
    COST_GET_PROFILE,
    COST_HISTORY_LIST,
    COST_MESSAGES_LIST,
    AuthCancelled,
    GmailAccess,
    GmailClient,
    IdPage,
    Profile,
)
from ingester.heartbeat import Heartbeat
from ingester.pacing import QuotaPacer
from ingester.report import Reporter
from ingester.scan_pages import walk_pages
from ingester.scan_settle import Settler
from ingester.scan_store import (
    HISTORY_ID_KEY,
    PENDING_HISTORY_ID_KEY,
    delete_sync_state,
    forget_settled,
    get_sync_state,
    pending_retries,
    set_sync_state,
)
from ingester.scan_types import ScanRequest, ScanResult, ScanTuning, Tally
from shared.errors import DatabaseError, GmailApiError, GmailAuthError, RunNotFoundError
from shared.models import RunOutcome, RunState, Source
from shared.runs import add_warnings, create_run, finish_run, get_run, reopen_run, update_run
from shared.timeutil import Clock


class _Scanner:
    def __init__(
        self,
        *,
        engine: Engine,
        request: ScanRequest,
        access: GmailAccess,
        tuning: ScanTuning,
        reporter: Reporter,
        cancel: threading.Event,
        clock: Clock,
        on_consent_url: Callable[[str], None],
    ) -> None:
        self.engine = engine
        self.request = request
        self.access = access
        self.tuning = tuning
        self.reporter = reporter
        self.cancel = cancel
        self.clock = clock
        self.on_consent_url = on_consent_url
        self.tally = Tally()
        self.run_id = 0
        self.mode = "full"
        self.fetcher: Fetcher | None = None
        self.settler: Settler | None = None

    # --- run row -------------------------------------------------------------------------------------------
    def _start_run(self) -> str | None:
        """Creates or reopens the run; returns the page token to resume from (None for page one)."""
        with self.engine.begin() as conn:
            wanted = self.request.resume_run_id
            if wanted is None:
                self.run_id = create_run(
                    conn,
                    source=Source.GMAIL_API,
                    pid=os.getpid(),
                    now=self.clock(),
                    launch_token=self.request.launch_token,
                )
                return None
            run = get_run(conn, wanted)
            if run is None:
                raise RunNotFoundError(f"there is no run {wanted}; see `gmail-stats runs`")
            if run.source != Source.GMAIL_API:
                raise RunNotFoundError(f"run {wanted} is a {run.source} run, not a Gmail scan")
            reopen_run(conn, run.run_id, pid=os.getpid(), now=self.clock(), launch_token=self.request.launch_token)
            self.run_id = run.run_id
            self.tally = Tally(run.messages_seen, run.messages_new, run.messages_skipped, run.messages_excluded)
            return run.resume_token

    def _consent_url(self, url: str) -> None:
        with self.engine.begin() as conn:
            update_run(conn, self.run_id, now=self.clock(), state=str(RunState.AWAITING_AUTH), auth_url=url)
        self.on_consent_url(url)

    def _finish(
        self, state: RunState, outcome: RunOutcome, *, kind: str | None = None, error: str | None = None
    ) -> None:
        with self.engine.begin() as conn:
            finish_run(conn, self.run_id, state=state, outcome=outcome, now=self.clock(), error_kind=kind, error=error)

    def _result(self, state: RunState, outcome: RunOutcome) -> ScanResult:
        t = self.tally
        return ScanResult(self.run_id, state, outcome, self.mode, t.seen, t.new, t.skipped, t.excluded)

    # --- the scan ------------------------------------------------------------------------------------------
    def run(self) -> ScanResult:
        resume_token = self._start_run()
        with Heartbeat(self.engine, self.run_id, clock=self.clock):
            try:
                return self._scan(resume_token)
            except (FetchCancelled, AuthCancelled):
                self._finish(RunState.CANCELLED, RunOutcome.PARTIAL)
                return self._result(RunState.CANCELLED, RunOutcome.PARTIAL)
            except GmailAuthError as exc:
                self._finish(RunState.FAILED, RunOutcome.PARTIAL, kind=exc.kind, error=str(exc))
                raise
            except OperationalError as exc:
                with contextlib.suppress(OperationalError):
                    self._finish(RunState.FAILED, RunOutcome.PARTIAL, kind="db", error=f"database error: {exc.orig}")
                raise DatabaseError(
                    f"database error during the scan: {exc.orig}; resume with --resume {self.run_id}"
                ) from exc
            except GmailApiError as exc:
                kind = "rate_limited" if exc.kind == "rate_limited" else "gmail_api"
                hint = f"; run `gmail-stats scan --resume {self.run_id}` later to continue"
                self._finish(RunState.FAILED, RunOutcome.PARTIAL, kind=kind, error=str(exc) + hint)
                raise GmailApiError(str(exc) + hint, kind=kind, status=exc.status) from exc
            finally:
                self.reporter.finish()

    def _scan(self, resume_token: str | None) -> ScanResult:
        factory = self.access.connect(on_consent_url=self._consent_url, cancel=self.cancel)
        with self.engine.begin() as conn:
            update_run(conn, self.run_id, now=self.clock(), state=str(RunState.RUNNING), auth_url=None)
            history_id = None if self.request.full else get_sync_state(conn, HISTORY_ID_KEY)
            retry_ids = pending_retries(conn)
            forget_settled(conn, keep_run_id=self.run_id)
        pacer = QuotaPacer(self.tuning.units_per_second, monotonic=time.monotonic, wait=self.cancel.wait)
        fetcher = Fetcher(
            factory, pacer=pacer, policy=self.tuning.retry, workers=self.tuning.workers, cancel=self.cancel
        )
        self.fetcher = fetcher
        settler = Settler(
            engine=self.engine,
            run_id=self.run_id,
            fetcher=fetcher,
            tally=self.tally,
            reporter=self.reporter,
            clock=self.clock,
            retries_pending=bool(retry_ids),
        )
        self.settler = settler
        try:
            profile: Profile = fetcher.call(COST_GET_PROFILE, lambda c: c.get_profile(), what="users.getProfile")
            with self.engine.begin() as conn:
                update_run(conn, self.run_id, now=self.clock(), total_estimate=profile.messages_total)
                # A resumed listing skips page one, where mail that arrived since the first start sits: the
                # history id to keep is the one from before the first start, so the next scan replays from there.
                pending = get_sync_state(conn, PENDING_HISTORY_ID_KEY) if resume_token is not None else None
                start_history_id = pending or profile.history_id
                set_sync_state(conn, PENDING_HISTORY_ID_KEY, start_history_id)
            self.reporter.start(description="Scanning Gmail", total=profile.messages_total, done=self.tally.seen)
            if retry_ids and not settler.collect(settler.submit([(i, None) for i in retry_ids])):
                raise FetchCancelled()
            if resume_token is not None or history_id is None:
                self._full(fetcher, settler, resume_token)
            else:
                self._incremental(fetcher, settler, history_id)
        finally:
            fetcher.close()
            self._warn([])
        with self.engine.begin() as conn:
            left = pending_retries(conn)
            set_sync_state(conn, HISTORY_ID_KEY, start_history_id)
            delete_sync_state(conn, PENDING_HISTORY_ID_KEY)
            forget_settled(conn, keep_run_id=None)
            outcome = RunOutcome.PARTIAL if left else RunOutcome.COMPLETE
            update_run(conn, self.run_id, now=self.clock(), resume_token=None)
            finish_run(conn, self.run_id, state=RunState.DONE, outcome=outcome, now=self.clock())
        return self._result(RunState.DONE, outcome)

    def _list(self, fetcher: Fetcher, token: str | None) -> IdPage:
        return fetcher.call(COST_MESSAGES_LIST, lambda c: c.list_messages(page_token=token), what="messages.list")

    def _full(self, fetcher: Fetcher, settler: Settler, token: str | None) -> None:
        self.mode = "full"
        try:
            page = self._list(fetcher, token)
        except GmailApiError as exc:
            if exc.kind != "bad_page_token":
                raise
            page = self._list(fetcher, None)  # an expired resume token: page one again, dedupe keeps counts exact
        walk_pages(
            page,
            lambda next_token: self._list(fetcher, next_token),
            settler=settler,
            cancel=self.cancel,
            page_done=self._page_done,
        )

    def _incremental(self, fetcher: Fetcher, settler: Settler, start: str) -> None:
        self.mode = "history"

        def history(token: str | None) -> IdPage:
            return fetcher.call(COST_HISTORY_LIST, _history_page(start, token), what="history.list")

        try:
            walk_pages(history(None), history, settler=settler, cancel=self.cancel, page_done=self._page_done)
        except GmailApiError as exc:
            if exc.kind != "history_expired":
                raise
            self._warn([f"Gmail's history since {start} has expired; listing the whole mailbox again"])
            self._full(fetcher, settler, None)

    def _page_done(self, page: IdPage) -> None:
        """Counts a settled page as seen; in a full listing the resume token moves past it in the same commit."""
        self.tally.seen += len(page.ids)
        token = page.next_page_token
        with self.engine.begin() as conn:
            values = {"resume_token": token} if self.mode == "full" and token else {}
            update_run(conn, self.run_id, now=self.clock(), messages_seen=self.tally.seen, **values)
        # Messages a thread fetch settled ahead of the listing are done too: one call may settle dozens.
        ahead = len(self.settler.ahead) if self.settler is not None else 0
        done = self.tally.seen + ahead
        self.reporter.progress(done=done, seen=done, new=self.tally.new)

    def _warn(self, warnings: list[str]) -> None:
        if self.fetcher is not None:
            warnings = self.fetcher.drain_warnings() + warnings
        if not warnings:
            return
        with self.engine.begin() as conn:
            add_warnings(conn, self.run_id, warnings)
        for text in warnings:
            self.reporter.warning(text)


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
) -> ScanResult:
    """Scans the mailbox behind `access` into the database behind `engine` (the caller holds the ingest lock)."""
    scanner = _Scanner(
        engine=engine,
        request=request,
        access=access,
        tuning=tuning,
        reporter=reporter,
        cancel=cancel,
        clock=clock,
        on_consent_url=on_consent_url,
    )
    return scanner.run()
