"""Gmail calls with quota pacing and retries, and the worker pool that fetches message metadata in batches.

Each worker thread owns one `GmailClient` (one service object, one keep-alive connection), made on first use.
Transient failures (429, rate-limit 403s, 5xx, transport) are retried with backoff; the rest are reported.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from ingester.gmail import COST_MESSAGES_GET, MAX_BATCH, ClientFactory, GmailClient, MessageMeta
from ingester.pacing import QuotaPacer, RetryPolicy
from shared.errors import RETRY_WARNING_PREFIX, ErrorKind, GmailApiError

T = TypeVar("T")


class FetchCancelled(Exception):
    """A cancel request arrived while a call was waiting for quota or backoff."""


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    """One batch's result after retries: fetched, deleted since listing (404), failed, or left for a resume."""

    messages: tuple[MessageMeta, ...]
    gone: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)
    unfinished: tuple[str, ...] = ()


class Fetcher:
    """Paces every call against one per-user quota and retries transient failures; collects retry warnings."""

    def __init__(
        self,
        factory: ClientFactory,
        *,
        pacer: QuotaPacer,
        policy: RetryPolicy,
        workers: int,
        cancel: threading.Event,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._factory = factory
        self._pacer = pacer
        self._policy = policy
        self._cancel = cancel
        self._rng = rng or random.Random()
        self._wall_clock = wall_clock
        self._local = threading.local()
        self._clients: list[GmailClient] = []
        self._lock = threading.Lock()
        self._warnings: list[str] = []
        # At most `MAX_BATCH`, and never more calls than one second of quota pays for: under a low quota a batch
        # of 50 would overdraw Gmail's bucket in one go and draw 429s for its tail every time.
        self.batch_size = max(1, min(MAX_BATCH, int(pacer.configured // COST_MESSAGES_GET)))
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="gmail")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()

    def drain_warnings(self) -> list[str]:
        with self._lock:
            warnings, self._warnings = self._warnings, []
        return warnings

    def _client(self) -> GmailClient:
        client: GmailClient | None = getattr(self._local, "client", None)
        if client is None:
            client = self._factory()
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    def _warn(self, text: str) -> None:
        with self._lock:
            self._warnings.append(text)

    def _after_transient(self, error: GmailApiError, attempt: int, *, what: str) -> None:
        """Slows the pace after a rate limit, honours "Retry after", waits the backoff; raises on cancel."""
        if error.kind == ErrorKind.RATE_LIMITED:
            self._pacer.throttled()
        delay = self._policy.delay(attempt, self._rng)
        if error.retry_at is not None:
            wait = error.retry_at - self._wall_clock()
            self._pacer.hold(wait)
            delay = max(delay, min(wait, 60.0))
        self._warn(f"{RETRY_WARNING_PREFIX} attempt {attempt} in {delay:.1f} s after {what}: {error}")
        if self._cancel.wait(delay):
            raise FetchCancelled()

    def call(self, units: int, fn: Callable[[GmailClient], T], *, what: str) -> T:
        """One paced call on this thread's client, retried while transient; the last error is raised."""
        for attempt in range(1, self._policy.attempts + 1):
            if self._pacer.acquire(units):
                raise FetchCancelled()
            try:
                return fn(self._client())
            except GmailApiError as exc:
                if not exc.transient or attempt == self._policy.attempts:
                    raise
                self._after_transient(exc, attempt, what=what)
        raise AssertionError("unreachable")

    def fetch(self, ids: Sequence[str]) -> list[Future[ChunkOutcome]]:
        """Submits `ids` in batches; each future yields that batch's outcome."""
        size = self.batch_size
        return [self._pool.submit(self._fetch_chunk, ids[i : i + size]) for i in range(0, len(ids), size)]

    def _fetch_chunk(self, ids: Sequence[str]) -> ChunkOutcome:
        messages: list[MessageMeta] = []
        gone: list[str] = []
        failed: dict[str, str] = {}
        pending = list(ids)
        attempt = 0
        while pending:
            attempt += 1
            if self._cancel.is_set() or self._pacer.acquire(COST_MESSAGES_GET * len(pending)):
                return ChunkOutcome(tuple(messages), tuple(gone), failed, tuple(pending))
            retry: dict[str, GmailApiError] = {}
            try:
                result = self._client().get_messages(pending)
            except GmailApiError as exc:
                retry = dict.fromkeys(pending, exc)
                if not exc.transient:
                    failed.update((i, str(exc)) for i in pending)
                    break
            else:
                messages.extend(result.messages)
                for gmail_id, error in result.failures.items():
                    if error.status == 404:  # deleted between list and get
                        gone.append(gmail_id)
                    elif error.transient:
                        retry[gmail_id] = error
                    else:
                        failed[gmail_id] = str(error)
            if not retry:
                break
            worst = next((e for e in retry.values() if e.kind == ErrorKind.RATE_LIMITED), next(iter(retry.values())))
            if attempt >= self._policy.attempts:
                failed.update((i, str(e)) for i, e in retry.items())
                break
            try:
                self._after_transient(worst, attempt, what=f"messages.get of {len(retry)} ids")
            except FetchCancelled:
                return ChunkOutcome(tuple(messages), tuple(gone), failed, tuple(retry))
            pending = list(retry)
        return ChunkOutcome(tuple(messages), tuple(gone), failed)


def iter_done(futures: Sequence[Future[ChunkOutcome]]) -> Iterator[ChunkOutcome]:
    """Outcomes in submission order (so commits follow the listing), re-raising a worker's exception."""
    for future in futures:
        yield future.result()
