"""The Gmail scan: authorise, list (full or by history), fetch metadata in paced batches, count, keep the run honest.

Every committed batch carries the counters it covers; `resume_token` only advances past fully committed pages,
so a `kill -9` at any instant followed by `--resume` (or any later scan: dedupe is by Gmail id, and `scan_settled`
remembers what the run fetched without keeping a row) stays exact. Fetching and counting live in `scan_settle`.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine

from ingester.gmail.fetcher import FetchCancelled, Fetcher
from ingester.gmail.gmail import (
    COST_GET_PROFILE,
    COST_HISTORY_LIST,
    COST_MESSAGES_LIST,
    GmailAccess,
    GmailClient,
    IdPage,
    Profile,
)
from ingester.gmail.pacing import QuotaPacer
from ingester.gmail.scan_pages import walk_pages
from ingester.gmail.scan_sample import SAMPLE_TOKEN, SampleScan, drop_sample
from ingester.gmail.scan_settle import Settler
from ingester.gmail.scan_store import (
    HISTORY_ID_KEY,
    PENDING_HISTORY_ID_KEY,
    delete_sync_state,
    forget_settled,
    get_sync_state,
    pending_retries,
    set_sync_state,
)
from ingester.gmail.scan_types import ScanRequest, ScanTuning
from ingester.runs.lifecycle import ResumeHint, RunLifecycle
from ingester.runs.outcome import RunResult
from ingester.runs.report import Reporter
from shared.account_store import is_address
from shared.accounts import GMAIL_ADDRESS_KEY
from shared.errors import ErrorKind, GmailApiError
from shared.resume import resume_command
from shared.schema.models import Source
from shared.timeutil import Clock

# A history run's resume token: this prefix, the feed's start history id, ":", the next history.list page token.
HISTORY_TOKEN = "history:"


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
        self.mode = "full"
        self.history_start = ""
        self.fetcher: Fetcher | None = None
        self.settler: Settler | None = None

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
        detail = "full listing, fetched in random order" if self.mode == "sample" else f"{self.mode} listing"
        return self.life.result(detail=detail)

    def _scan(self, resume_token: str | None) -> None:
        life = self.life
        factory = self.access.connect(on_consent_url=self._consent_url, cancel=self.cancel)
        life.authorised()
        with self.engine.begin() as conn:
            last_history_id = get_sync_state(conn, HISTORY_ID_KEY)
            history_id = None if self.request.full else last_history_id
            retry_ids = pending_retries(conn)
            forget_settled(conn)  # of runs that ended; a cancelled or failed one may still be resumed
        pacer = QuotaPacer(self.tuning.units_per_second, monotonic=time.monotonic, wait=self.cancel.wait)
        fetcher = Fetcher(
            factory, pacer=pacer, policy=self.tuning.retry, workers=self.tuning.workers, cancel=self.cancel
        )
        self.fetcher = fetcher
        settler = Settler(life=life, fetcher=fetcher, retries_pending=bool(retry_ids))
        self.settler = settler
        try:
            profile: Profile = fetcher.call(COST_GET_PROFILE, lambda c: c.get_profile(), what="users.getProfile")
            with life.batch(total_estimate=profile.messages_total) as conn:
                # A resumed listing skips page one, where mail that arrived since the first start sits: the
                # history id to keep is the one from before the first start, so the next scan replays from there.
                pending = get_sync_state(conn, PENDING_HISTORY_ID_KEY) if resume_token is not None else None
                start_history_id = pending or profile.history_id
                set_sync_state(conn, PENDING_HISTORY_ID_KEY, start_history_id)
                if is_address(profile.email_address):
                    set_sync_state(conn, GMAIL_ADDRESS_KEY, profile.email_address.lower())
            life.reporter.start(description="Scanning Gmail", total=profile.messages_total, done=life.tally.seen)
            if retry_ids and not settler.collect(settler.submit([(i, None) for i in retry_ids])):
                raise FetchCancelled()
            if resume_token is not None and resume_token.startswith(HISTORY_TOKEN):
                start, _, page_token = resume_token.removeprefix(HISTORY_TOKEN).partition(":")
                self._incremental(fetcher, settler, start, page_token)
            elif resume_token is not None and resume_token.startswith(SAMPLE_TOKEN):
                self._sample(fetcher, settler, resume_token)
            elif resume_token is None and last_history_id is None and self.tuning.random_first_scan:
                self._sample(fetcher, settler, None)  # the first full scan: a random sample at every moment
            elif resume_token is not None or history_id is None:
                self._full(fetcher, settler, resume_token)
            else:
                self._incremental(fetcher, settler, history_id, None)
        finally:
            fetcher.close()
            self._warn([])
        with life.batch(resume_token=None) as conn:
            left = pending_retries(conn)
            set_sync_state(conn, HISTORY_ID_KEY, start_history_id)
            delete_sync_state(conn, PENDING_HISTORY_ID_KEY)
            forget_settled(conn, run_id=life.run_id)
            if self.mode == "sample":
                drop_sample(conn)  # every figure is exact now: the estimates go with the order they came from
            life.finish(conn, cancelled=False, partial=bool(left))

    def _list(self, fetcher: Fetcher, token: str | None) -> IdPage:
        return fetcher.call(COST_MESSAGES_LIST, lambda c: c.list_messages(page_token=token), what="messages.list")

    def _full(self, fetcher: Fetcher, settler: Settler, token: str | None) -> None:
        self.mode = "full"
        try:
            page = self._list(fetcher, token)
        except GmailApiError as exc:
            if exc.kind != ErrorKind.BAD_PAGE_TOKEN:
                raise
            page = self._list(fetcher, None)  # an expired resume token: page one again, dedupe keeps counts exact
        walk_pages(
            page,
            lambda next_token: self._list(fetcher, next_token),
            settler=settler,
            cancel=self.cancel,
            page_done=self._page_done,
        )

    def _sample(self, fetcher: Fetcher, settler: Settler, token: str | None) -> None:
        self.mode = "sample"
        seed = self.tuning.order_seed
        walk = SampleScan(
            life=self.life,
            settler=settler,
            cancel=self.cancel,
            list_page=lambda page_token: self._list(fetcher, page_token),
            seed=random.SystemRandom().randrange(2**31) if seed is None else seed,
        )
        walk.run(token)

    def _incremental(self, fetcher: Fetcher, settler: Settler, start: str, token: str | None) -> None:
        self.mode = "history"
        self.history_start = start

        def history(page_token: str | None) -> IdPage:
            return fetcher.call(COST_HISTORY_LIST, _history_page(start, page_token), what="history.list")

        try:
            try:
                first = history(token)
            except GmailApiError as exc:
                if exc.kind != ErrorKind.BAD_PAGE_TOKEN:
                    raise
                first = history(None)  # an expired resume token: replay the feed, dedupe keeps counts exact
            walk_pages(first, history, settler=settler, cancel=self.cancel, page_done=self._page_done)
        except GmailApiError as exc:
            if exc.kind != ErrorKind.HISTORY_EXPIRED:
                raise
            self._warn([f"Gmail's history since {start} has expired; listing the whole mailbox again"])
            self._full(fetcher, settler, None)

    def _page_done(self, page: IdPage) -> None:
        """Counts a settled page as seen; in a full listing the resume token moves past it in the same commit."""
        tally = self.life.tally
        tally.seen += len(page.ids)
        token = page.next_page_token
        values: dict[str, str] = {}
        if token and self.mode == "full":
            values["resume_token"] = token
        elif token:  # a resumed history run goes on from this page of the same feed, not from its start
            values["resume_token"] = f"{HISTORY_TOKEN}{self.history_start}:{token}"
        with self.life.batch(**values):
            pass
        # Messages a thread fetch settled ahead of the listing are done too: one call may settle dozens.
        done = tally.seen + (len(self.settler.ahead) if self.settler is not None else 0)
        self.life.reporter.progress(done=done, seen=done, new=tally.new)

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
        resume_hint=resume_hint or (lambda run_id: resume_command(source=Source.GMAIL_API, run_id=run_id)),
    )
    scanner = _Scanner(life=life, request=request, access=access, tuning=tuning, on_consent_url=on_consent_url)
    return scanner.run()
