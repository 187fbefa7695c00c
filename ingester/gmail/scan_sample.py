"""A first full scan in random order: list every id first, persist it, then fetch whole threads in a seeded permutation.

So every moment of the scan is a simple random sample of the mailbox's threads, and the viewer can estimate each
sender's totals from it (`shared.sampling`). Listing costs 5 units a page of 500 ids (500,000 ids: about 20 s at 250
units/s); fetching is the `Settler`'s, unchanged: the thread-aware plan, pacing, batching, retries and dedupe.

The listing and the order live in `scan_listed` and `scan_sample` (schema step 8). The run's `resume_token` says
where a resume goes on: `sample:list:<page token>` while listing (ids are inserted or ignored, so a page listed
twice adds nothing), `sample:fetch` once the order is drawn; `scan_sample.threads_done` then moves past each settled
chunk of slots in the same commit as nothing else needs it, and ids of a chunk cut short are skipped on resume by the
usual dedupe (`unsettled_ids`), so no id is fetched twice and none skipped.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from ingester.gmail.fetcher import FetchCancelled
from ingester.gmail.gmail import IdPage
from ingester.gmail.scan_settle import Listed, Settler, Submitted
from ingester.runs.lifecycle import RunLifecycle
from shared.errors import ErrorKind, GmailApiError

SAMPLE_TOKEN = "sample:"
LIST_TOKEN = f"{SAMPLE_TOKEN}list:"
FETCH_TOKEN = f"{SAMPLE_TOKEN}fetch"
# Ids per fetch step: about one listing page, so a step settles and commits as often as a page of today's order did.
CHUNK_IDS = 500


def draw_order(thread_keys: Sequence[str], *, seed: int) -> dict[str, int]:
    """Each distinct thread key's slot in a uniformly random permutation fixed by `seed` (pure, repeatable)."""
    keys = sorted(set(thread_keys))
    random.Random(seed).shuffle(keys)
    return {key: slot for slot, key in enumerate(keys)}


# --- SQL of the sample (the caller owns the transaction) ---------------------------------------------------------
def start_sample(conn: Connection, *, run_id: int, seed: int, now: int) -> None:
    """Forgets any earlier run's listing (a new first scan lists afresh) and opens this run's."""
    conn.exec_driver_sql("DELETE FROM scan_listed")
    conn.exec_driver_sql("DELETE FROM scan_sample")
    conn.exec_driver_sql(
        "INSERT INTO scan_sample (run_id, seed, started_at_unix) VALUES (?, ?, ?)", (run_id, seed, now)
    )


def add_listed(conn: Connection, pairs: Sequence[Listed]) -> None:
    if pairs:
        conn.exec_driver_sql("INSERT OR IGNORE INTO scan_listed (gmail_id, thread_id) VALUES (?, ?)", list(pairs))


def sample_seed(conn: Connection, *, run_id: int) -> int | None:
    row = conn.exec_driver_sql("SELECT seed FROM scan_sample WHERE run_id = ?", (run_id,)).first()
    return int(row[0]) if row is not None else None


def fix_order(conn: Connection, *, run_id: int, seed: int) -> None:
    """Draws the permutation over every listed thread and stores each id's slot; the listing is then closed."""
    rows = conn.exec_driver_sql("SELECT gmail_id, coalesce(thread_id, gmail_id) FROM scan_listed").all()
    slots = draw_order([str(key) for _, key in rows], seed=seed)
    conn.exec_driver_sql(
        "UPDATE scan_listed SET slot = ? WHERE gmail_id = ?", [(slots[str(key)], str(i)) for i, key in rows]
    )
    conn.exec_driver_sql(
        "UPDATE scan_sample SET listed = 1, ids_total = ?, threads_total = ? WHERE run_id = ?",
        (len(rows), len(slots), run_id),
    )


def threads_done(conn: Connection, *, run_id: int) -> int:
    row = conn.exec_driver_sql("SELECT threads_done FROM scan_sample WHERE run_id = ?", (run_id,)).first()
    return int(row[0]) if row is not None else 0


def chunk_from(conn: Connection, slot: int, *, limit: int = CHUNK_IDS) -> tuple[list[Listed], int]:
    """The ids of whole slots from `slot` on, about `limit` of them, and the slot after the last one taken."""
    rows = conn.exec_driver_sql(
        "SELECT gmail_id, thread_id, slot FROM scan_listed WHERE slot >= ? ORDER BY slot, gmail_id LIMIT ?",
        (slot, limit + 1),
    ).all()
    if not rows:
        return [], slot
    if len(rows) <= limit:
        return [(str(g), t) for g, t, _ in rows], int(rows[-1][2]) + 1
    last = int(rows[-1][2])
    kept = [(str(g), t) for g, t, s in rows if s != last]
    if kept:
        return kept, last
    # One thread longer than the chunk: it goes whole.
    whole = conn.exec_driver_sql("SELECT gmail_id, thread_id FROM scan_listed WHERE slot = ?", (last,)).all()
    return [(str(g), t) for g, t in whole], last + 1


def mark_done(conn: Connection, *, run_id: int, slot: int) -> None:
    conn.exec_driver_sql("UPDATE scan_sample SET threads_done = ? WHERE run_id = ?", (slot, run_id))


def drop_sample(conn: Connection) -> None:
    """At the scan's end: every figure is exact, the estimates go."""
    conn.exec_driver_sql("DELETE FROM scan_listed")
    conn.exec_driver_sql("DELETE FROM scan_sample")


# --- the walk ----------------------------------------------------------------------------------------------------
class SampleScan:
    """Lists, draws the order and fetches slot by slot for one run; commits through the run's lifecycle."""

    def __init__(
        self,
        *,
        life: RunLifecycle,
        settler: Settler,
        cancel: threading.Event,
        list_page: Callable[[str | None], IdPage],
        seed: int,
    ) -> None:
        self.life = life
        self.settler = settler
        self.cancel = cancel
        self.list_page = list_page
        self.seed = seed

    def run(self, token: str | None) -> None:
        """Starts (`token` None) or resumes a sample scan; raises `FetchCancelled` when cancelled."""
        if token is None:
            with self.life.batch(resume_token=LIST_TOKEN) as conn:
                start_sample(conn, run_id=self.life.run_id, seed=self.seed, now=int(self.life.clock()))
            token = LIST_TOKEN
        if token.startswith(LIST_TOKEN):
            self._list(token.removeprefix(LIST_TOKEN) or None)
        self._fetch()

    def _list(self, page_token: str | None) -> None:
        life = self.life
        while True:
            if self.cancel.is_set():
                raise FetchCancelled()
            try:
                page = self.list_page(page_token)
            except GmailApiError as exc:
                if exc.kind != ErrorKind.BAD_PAGE_TOKEN or page_token is None:
                    raise
                page = self.list_page(None)  # an expired token: list again from page one, ids are kept once
            after = page.next_page_token
            with life.batch(resume_token=f"{LIST_TOKEN}{after}" if after else FETCH_TOKEN) as conn:
                add_listed(conn, page.pairs())
                if after is None:
                    seed = sample_seed(conn, run_id=life.run_id)
                    fix_order(conn, run_id=life.run_id, seed=self.seed if seed is None else seed)
            if after is None:
                return
            page_token = after

    def _fetch(self) -> None:
        life = self.life
        with life.engine.begin() as conn:
            slot = threads_done(conn, run_id=life.run_id)
            chunk, after = chunk_from(conn, slot)
        in_flight: tuple[Submitted, list[Listed], int] | None = None
        if chunk:
            in_flight = (self.settler.submit(chunk), chunk, after)
        while in_flight is not None:
            submitted, ids, end = in_flight
            in_flight = None
            if not self.cancel.is_set():
                with life.engine.begin() as conn:
                    chunk, after = chunk_from(conn, end)
                if chunk:  # the next chunk's threads are disjoint from this one's: fetch it meanwhile
                    in_flight = (self.settler.submit(chunk), chunk, after)
            complete = self.settler.collect(submitted)
            if not complete:
                if in_flight is not None:
                    self.settler.collect(in_flight[0])  # commit what it fetched; its slot stays unsettled
                raise FetchCancelled()
            life.tally.seen += len(ids)
            with life.batch() as conn:
                mark_done(conn, run_id=life.run_id, slot=end)
            self.settler.passed([i for i, _ in ids])
            done = life.tally.seen + len(self.settler.ahead)
            life.reporter.progress(done=done, seen=done, new=life.tally.new)
        if self.cancel.is_set():
            raise FetchCancelled()
