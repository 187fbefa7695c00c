"""`/api/estimates` and `/api/estimates.csv`: every sender's or domain's estimated totals while a first scan runs.

A first full scan fetches threads in a random order (`ingester.gmail.scan_sample`), so what it has counted so far is
a random sample of the mailbox; `shared.sampling` turns it into estimates with 95% intervals (docs/scanning.md).
Every figure here is named `estimated_*` and the answer says `"estimated": true`; once the scan completes the
sample is gone, the answer says `"estimated": false` with no rows, and the exact counts are `/api/senders`'.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field

from shared.lock import is_lock_held
from shared.sampling.estimator import Estimate, Interval, estimate_groups
from shared.sampling.sample_reads import Grouping, SampleState, read_sample, read_sample_state
from shared.schema.models import OPEN_STATES
from shared.text.csv_cells import neutralise_row
from viewer.query.database import Database
from viewer.query.queries import DbState
from viewer.web.deps import StateDep

router = APIRouter(prefix="/api")


class EstimateOut(BaseModel):
    """An estimate and its 95% interval; `high_95` is null while nothing bounds it."""

    estimate: float
    low_95: float
    high_95: float | None


class EstimatedRowOut(BaseModel):
    key: str = Field(description="the sender (or domain)")
    estimated_rank: int
    estimated_rank_best: int
    estimated_rank_worst: int
    estimated_too_wide_to_rank: bool
    estimated_messages: EstimateOut
    estimated_share: EstimateOut = Field(description="of every counted message in the mailbox")
    estimated_bytes: EstimateOut
    estimated_unread_share: EstimateOut = Field(description="of the sender's own messages")


class SampleOut(BaseModel):
    run_id: int
    run_state: str | None
    share_of_mailbox: float
    messages_sampled: int
    messages_listed: int
    threads_sampled: int
    threads_listed: int
    exact_in_seconds: float | None


class EstimatesOut(BaseModel):
    estimated: bool = Field(description="true while the figures are estimates; false once every count is exact")
    phase: Literal["exact", "listing", "sampling", "stopped"]
    by: Literal["sender", "domain"]
    sample: SampleOut | None
    rows: list[EstimatedRowOut]


By = Annotated[Grouping, Query(description="estimate per sender or per domain")]
Limit = Annotated[int, Query(ge=1, le=100_000)]
CSV_COLUMNS = (
    "key",
    "estimated_rank",
    "estimated_rank_best",
    "estimated_rank_worst",
    "estimated_too_wide_to_rank",
    *(
        f"estimated_{name}{suffix}"
        for name in ("messages", "share", "bytes", "unread_share")
        for suffix in ("", "_low_95", "_high_95")
    ),
    "estimated_from_share_of_mailbox",
)


def _phase(state: SampleState, *, lock_held: bool) -> Literal["listing", "sampling", "stopped"]:
    """While the run is open the sample grows; a run that ended early keeps what it had, and says so."""
    if state.run_state not in OPEN_STATES or not lock_held:
        # Cancelled, failed, abandoned, or killed (its row still open, no ingester holding the lock): the
        # estimates stand, marked as those of a partial sample.
        return "stopped"
    return "sampling" if state.listed else "listing"


def _eta(state: SampleState, now: float, *, phase: str) -> float | None:
    """Seconds until every listed message is fetched, at the pace of the run so far (None when unknown)."""
    if phase != "sampling" or state.ids_done <= 0:
        return None
    elapsed = max(float(state.updated_at_unix or now) - state.started_at_unix, 1.0)
    return (state.ids_total - state.ids_done) * elapsed / state.ids_done


def _interval(value: Interval, *, digits: int) -> EstimateOut:
    high = None if math.isinf(value.high) else round(value.high, digits)
    return EstimateOut(estimate=round(value.estimate, digits), low_95=round(value.low, digits), high_95=high)


def _row(e: Estimate) -> EstimatedRowOut:
    return EstimatedRowOut(
        key=e.key,
        estimated_rank=e.rank,
        estimated_rank_best=e.rank_best,
        estimated_rank_worst=e.rank_worst,
        estimated_too_wide_to_rank=e.too_wide_to_rank,
        estimated_messages=_interval(e.messages, digits=1),
        estimated_share=_interval(e.share, digits=5),
        estimated_bytes=_interval(e.bytes, digits=0),
        estimated_unread_share=_interval(e.unread_share, digits=4),
    )


def _answer(database: Database, by: Grouping) -> tuple[SampleState | None, list[Estimate]]:
    with database.read_snapshot() as read:
        if read is None:
            return None, []
        conn, snap = read
        # A ready schema is the latest, whose step 9 made the sample tables.
        state = read_sample_state(conn) if snap.state is DbState.READY else None
        if state is None:
            return None, []
        sample, groups = read_sample(conn, state, grouping=by)
    return state, estimate_groups(sample, groups)


@router.get("/estimates")
def estimates(viewer: StateDep, by: By = "sender", limit: Limit = 50) -> EstimatesOut:
    """Estimates from the first scan's random sample, or `"estimated": false` when every count is exact."""
    now = viewer.clock()
    state, found = _answer(viewer.database, by)
    if state is None:
        return EstimatesOut(estimated=False, phase="exact", by=by, sample=None, rows=[])
    phase = _phase(state, lock_held=is_lock_held(viewer.settings.db))
    sample = SampleOut(
        run_id=state.run_id,
        run_state=state.run_state,
        share_of_mailbox=round(state.fraction, 5),
        messages_sampled=state.ids_done,
        messages_listed=state.ids_total,
        threads_sampled=state.threads_done,
        threads_listed=state.threads_total,
        exact_in_seconds=_eta(state, now, phase=phase),
    )
    rows = [_row(e) for e in found[:limit]] if phase != "listing" else []
    return EstimatesOut(estimated=True, phase=phase, by=by, sample=sample, rows=rows)


@router.get("/estimates.csv", response_class=Response)
def estimates_csv(viewer: StateDep, by: By = "sender") -> Response:
    """Every estimate as CSV; each figure's column says `estimated_`, with its 95% interval beside it."""
    state, found = _answer(viewer.database, by)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    fraction = round(state.fraction, 5) if state is not None else 1.0
    for e in found if state is not None and state.listed else []:
        row = _row(e)  # rounded as the JSON answer rounds them; an unbounded interval's high is an empty cell
        figures = (row.estimated_messages, row.estimated_share, row.estimated_bytes, row.estimated_unread_share)
        cells = [cell for f in figures for cell in (f.estimate, f.low_95, "" if f.high_95 is None else f.high_95)]
        writer.writerow(
            neutralise_row([e.key, e.rank, e.rank_best, e.rank_worst, int(e.too_wide_to_rank), *cells, fraction])
        )
    headers = {"Content-Disposition": f'attachment; filename="gmail-stats-estimated-{by}s.csv"'}
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)
