"""Gmail calls with quota pacing and retries, and the worker pool that fetches message or thread metadata in batches.

Each worker thread owns one `GmailClient` (one service object, one keep-alive connection), made on first use.
Transient failures (429, rate-limit 403s, 5xx, transport) are retried with backoff; the rest are reported.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ingester.gmail.gmail import (
    COST_MESSAGES_GET,
    COST_THREADS_GET,
    MAX_BATCH,
    ClientFactory,
    GmailClient,
    MessageMeta,
    ThreadMeta,
)
from ingester.gmail.pacing import QuotaPacer, RetryPolicy
from ingester.runs.lifecycle import RunCancelled
from shared.errors import RETRY_WARNING_PREFIX, ErrorKind, GmailApiError

T = TypeVar("T")
Item = TypeVar("Item")
# One batch call: the items found and a Gmail error per key that failed.
BatchCall = Callable[[GmailClient, list[str]], tuple[Sequence[Item], Mapping[str, GmailApiError]]]


class FetchCancelled(RunCancelled):
    """A cancel request arrived while a call was waiting for quota or backoff."""


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    """One batch's result after retries: fetched, deleted since listing (404), failed, or left for a resume."""

    messages: tuple[MessageMeta, ...]
    gone: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)
    unfinished: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ThreadOutcome:
    """One batch of `threads.get` after retries; `gone`, `failed` and `unfinished` hold thread ids."""

    threads: tuple[ThreadMeta, ...]
    gone: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)
    unfinished: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Chunk(Generic[Item]):
    items: tuple[Item, ...]
    gone: tuple[str, ...]
    failed: dict[str, str]
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
        self.thread_batch_size = max(1, min(MAX_BATCH, int(pacer.configured // COST_THREADS_GET)))
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
        """Submits `ids` in batches of `messages.get`; each future yields that batch's outcome."""
        size = self.batch_size
        return [self._pool.submit(self._fetch_messages, ids[i : i + size]) for i in range(0, len(ids), size)]

    def fetch_threads(self, thread_ids: Sequence[str]) -> list[Future[ThreadOutcome]]:
        """Submits `thread_ids` in batches of `threads.get`; each future yields that batch's outcome."""
        size = self.thread_batch_size
        return [
            self._pool.submit(self._fetch_threads, thread_ids[i : i + size]) for i in range(0, len(thread_ids), size)
        ]

    def _fetch_messages(self, ids: Sequence[str]) -> ChunkOutcome:
        def call(client: GmailClient, keys: list[str]) -> tuple[Sequence[MessageMeta], Mapping[str, GmailApiError]]:
            result = client.get_messages(keys)
            return result.messages, result.failures

        chunk = self._fetch_chunk(ids, call, cost=COST_MESSAGES_GET, what="messages.get")
        return ChunkOutcome(chunk.items, chunk.gone, chunk.failed, chunk.unfinished)

    def _fetch_threads(self, thread_ids: Sequence[str]) -> ThreadOutcome:
        def call(client: GmailClient, keys: list[str]) -> tuple[Sequence[ThreadMeta], Mapping[str, GmailApiError]]:
            result = client.get_threads(keys)
            return result.threads, result.failures

        chunk = self._fetch_chunk(thread_ids, call, cost=COST_THREADS_GET, what="threads.get")
        return ThreadOutcome(chunk.items, chunk.gone, chunk.failed, chunk.unfinished)

    def _fetch_chunk(self, keys: Sequence[str], call: BatchCall[Item], *, cost: int, what: str) -> _Chunk[Item]:
        """Fetches `keys` in one batch, retrying the transient failures; 404 means deleted since listing."""
        items: list[Item] = []
        gone: list[str] = []
        failed: dict[str, str] = {}
        pending = list(keys)
        attempt = 0
        while pending:
            attempt += 1
            if self._cancel.is_set() or self._pacer.acquire(cost * len(pending)):
                return _Chunk(tuple(items), tuple(gone), failed, tuple(pending))
            retry: dict[str, GmailApiError] = {}
            try:
                found, failures = call(self._client(), pending)
            except GmailApiError as exc:
                retry = dict.fromkeys(pending, exc)
                if not exc.transient:
                    failed.update((i, str(exc)) for i in pending)
                    break
            else:
                items.extend(found)
                for item_key, error in failures.items():
                    if error.status == 404:  # deleted between list and get
                        gone.append(item_key)
                    elif error.transient:
                        retry[item_key] = error
                    else:
                        failed[item_key] = str(error)
            if not retry:
                break
            worst = next((e for e in retry.values() if e.kind == ErrorKind.RATE_LIMITED), next(iter(retry.values())))
            if attempt >= self._policy.attempts:
                failed.update((i, str(e)) for i, e in retry.items())
                break
            try:
                self._after_transient(worst, attempt, what=f"{what} of {len(retry)} ids")
            except FetchCancelled:
                return _Chunk(tuple(items), tuple(gone), failed, tuple(retry))
            pending = list(retry)
        return _Chunk(tuple(items), tuple(gone), failed)


def iter_done(futures: Sequence[Future[T]]) -> Iterator[T]:
    """Outcomes in submission order (so commits follow the listing), re-raising a worker's exception."""
    for future in futures:
        yield future.result()
