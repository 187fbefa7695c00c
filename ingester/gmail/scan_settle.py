"""Settles listed Gmail ids: plans thread or message fetches, submits them, and commits each batch with its tallies.

Owns what a batch means for the counts (new, excluded, gone, failed) and the run's `scan_settled` memory; it does
not list, page, or decide the run's state — the scan does.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from ingester.gmail.fetcher import ChunkOutcome, Fetcher, ThreadOutcome
from ingester.gmail.gmail_records import record_from_meta
from ingester.gmail.scan_store import clear_retries, record_retries, settle, unknown_ids, unsettled_ids
from ingester.gmail.threads import FetchPlan, ThreadWant, plan_fetches
from ingester.records import MailRecord
from ingester.runs.lifecycle import RunLifecycle
from ingester.store.store_guard import count_batch_guarded
from shared.schema.models import Source

Listed = tuple[str, str | None]  # (Gmail id, thread id or None)


@dataclass(frozen=True, slots=True)
class Submitted:
    """The fetches in flight for one page: message batches and thread batches, in listing order."""

    plan: FetchPlan
    messages: list[Future[ChunkOutcome]]
    threads: list[Future[ThreadOutcome]]


@dataclass(slots=True)
class _Batch:
    """What one fetched batch adds up to before it is committed."""

    records: list[MailRecord]
    settled: dict[str, str]
    gone: list[str]
    failed: dict[str, str]
    fetched: list[str]
    excluded: int = 0
    notes: list[str] = field(default_factory=list)  # odd headers: counted anyway, and said so


class Settler:
    """Fetches and counts for one run; commits on the caller's thread, so commits never race each other."""

    def __init__(self, *, life: RunLifecycle, fetcher: Fetcher, retries_pending: bool) -> None:
        self.life = life
        self.engine = life.engine
        self.run_id = life.run_id
        self.fetcher = fetcher
        self.retries_pending = retries_pending
        # Listed ids settled before their own page is done (by a thread fetch), and messages a thread fetch counted
        # before the listing reached them: progress counts them as done, so it moves when one call settles many.
        self.ahead: set[str] = set()

    def submit(self, due: Sequence[Listed], ahead: Sequence[Listed] = ()) -> Submitted:
        """Plans and submits the fetches that settle every still-unknown id of `due` (see `plan_fetches`)."""
        due_ids = [i for i, _ in due]
        ahead_ids = [i for i, _ in ahead]
        with self.engine.begin() as conn:
            todo = set(unsettled_ids(conn, due_ids + ahead_ids, run_id=self.run_id))
            if self.retries_pending:
                counted = set(due_ids) - set(unknown_ids(conn, due_ids))
                clear_retries(conn, counted)  # counted meanwhile (e.g. by an import)
        plan = plan_fetches([p for p in due if p[0] in todo], [p for p in ahead if p[0] in todo])
        return Submitted(
            plan,
            self.fetcher.fetch(plan.messages),
            self.fetcher.fetch_threads([want.thread_id for want in plan.threads]),
        )

    def collect(self, submitted: Submitted) -> bool:
        """Commits each batch as it completes; returns False when some ids were left unfetched (cancel)."""
        complete = True
        for outcome in (f.result() for f in submitted.messages):
            self._commit(self._messages(outcome))
            complete = complete and not outcome.unfinished
        wants = {want.thread_id: want for want in submitted.plan.threads}
        for thread_outcome in (f.result() for f in submitted.threads):
            self._commit(self._threads(thread_outcome, wants))
            complete = complete and not thread_outcome.unfinished
        return complete

    def passed(self, ids: Sequence[str]) -> None:
        """The listing's settled head has moved past `ids`: they count as seen now, no longer as ahead."""
        self.ahead.difference_update(ids)

    # --- one batch -----------------------------------------------------------------------------------------
    def _messages(self, outcome: ChunkOutcome) -> _Batch:
        batch = _Batch([], {}, list(outcome.gone), dict(outcome.failed), [m.gmail_id for m in outcome.messages])
        now = self.life.clock()
        for meta in outcome.messages:
            record = record_from_meta(meta, now=now, warnings=batch.notes)
            if record is None:
                batch.excluded += 1
                batch.settled[meta.gmail_id] = "excluded"
            else:
                batch.records.append(record)
        return batch

    def _threads(self, outcome: ThreadOutcome, wants: dict[str, ThreadWant]) -> _Batch:
        """Counts the listed messages a thread settles, and any other unknown, countable member it carries.

        Members never listed (Spam/Trash, or not listed yet) count only if countable: a later page then finds
        them known. A listed message missing from its thread was deleted since listing, as a 404 would say.
        """
        batch = _Batch([], {}, [], {}, [])
        extras: list[MailRecord] = []
        extra_notes: dict[str, list[str]] = {}
        now = self.life.clock()
        for thread in outcome.threads:
            wanted = set(wants[thread.thread_id].ids)
            returned = set()
            for meta in thread.messages:
                returned.add(meta.gmail_id)
                notes: list[str] = []  # said only of a message counted here (an extra may be known already)
                record = record_from_meta(meta, now=now, warnings=notes)
                if meta.gmail_id in wanted:
                    batch.notes += notes
                    batch.fetched.append(meta.gmail_id)
                    if record is None:
                        batch.excluded += 1
                        batch.settled[meta.gmail_id] = "excluded"
                    else:
                        batch.records.append(record)
                elif record is not None and "DRAFT" not in meta.label_ids:
                    # A draft is counted only if the listing shows it, as before threads: it comes by its own page.
                    extras.append(record)
                    extra_notes[meta.gmail_id] = notes
            batch.gone += [i for i in wants[thread.thread_id].ids if i not in returned]
        for thread_id in outcome.gone:
            batch.gone += wants[thread_id].ids
        for thread_id, reason in outcome.failed.items():
            batch.failed.update(dict.fromkeys(wants[thread_id].ids, reason))
        if extras:
            with self.engine.begin() as conn:
                fresh = set(unsettled_ids(conn, [r.mail_id for r in extras], run_id=self.run_id))
            batch.records += [r for r in extras if r.mail_id in fresh]
            batch.notes += [note for r in extras if r.mail_id in fresh for note in extra_notes[r.mail_id]]
        self.ahead.update(batch.fetched)
        self.ahead.update(r.mail_id for r in batch.records)
        self.ahead.update(batch.gone)
        self.ahead.update(batch.failed)
        return batch

    def _commit(self, batch: _Batch) -> None:
        warnings = batch.notes + [f"message {i} was deleted before it could be read; skipped" for i in batch.gone]
        warnings += [
            f"message {i} could not be fetched ({reason}); the next scan retries it"
            for i, reason in batch.failed.items()
        ]
        warnings = self.fetcher.drain_warnings() + warnings
        tally = self.life.tally
        tally.excluded += batch.excluded
        tally.skipped += len(batch.failed)
        with self.life.batch(warnings) as conn:
            outcome, rejected = count_batch_guarded(conn, batch.records, source=Source.GMAIL_API, run_id=self.run_id)
            tally.new += outcome.new
            # A message the database refuses is not counted, and the next scan retries it, as a failed fetch.
            refused = {
                batch.records[r.index].mail_id: f"the database refused its values ({r.reason})" for r in rejected
            }
            warnings += [
                f"message {i} could not be stored ({why}); the next scan retries it" for i, why in refused.items()
            ]
            tally.skipped += len(refused)
            failed = batch.failed | refused
            settled = batch.settled | dict.fromkeys(batch.gone, "gone") | dict.fromkeys(failed, "failed")
            if self.retries_pending:
                stored = [r.mail_id for r in batch.records if r.mail_id not in refused]
                clear_retries(conn, [*stored, *(i for i in batch.fetched if i not in refused), *batch.gone])
            record_retries(conn, failed, run_id=self.run_id)
            settle(conn, settled, run_id=self.run_id)
