"""A run's true state as the page must show it, derived read-only from its row, the ingest lock and the launcher.

The viewer never writes the row: a run left `running` by a killed ingester stays so until the next ingester marks
it `abandoned`; until then these facts let the page say it stopped, and how much a partial run left out.
"""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from shared.runs import Run
from shared.schema.models import gmail_retry


def stopped_unexpectedly(run: Run, *, lock_held: bool, runner_alive: bool) -> bool:
    """An open row nobody is running: no ingester holds the lock (the kernel drops it when a process dies) and
    the runner this viewer started, if any, has exited (a lock on a filesystem that does not share `flock`s with
    the runner's must not make a live run look dead)."""
    return run.is_open and not lock_held and not runner_alive


def unfetched_by_run(conn: Connection) -> dict[int, int]:
    """Messages a scan listed but could not fetch, by the run that last tried them; the next scan retries them.
    Read from a ready schema only, which has the retry table (migration 4)."""
    rows = conn.execute(
        select(gmail_retry.c.run_id, func.count())
        .where(gmail_retry.c.run_id.is_not(None))
        .group_by(gmail_retry.c.run_id)
    )
    return {int(run_id): int(count) for run_id, count in rows}
