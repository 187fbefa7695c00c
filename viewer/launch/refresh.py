"""Always fresh: an account's freshness as the page shows it, and the viewer's timer that starts an unattended
incremental scan when an account's refresh interval has passed and nothing runs.

The refresh goes through the account's `RunControl` (the same launcher, lock and run records as a scan the person
starts); it passes `--unattended`, so a scan that would need consent ends `failed/auth_required` and the page asks
the person. After such a failure no refresh starts until a scan succeeds again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from shared.account_store import read_settings
from shared.accounts import Refresh
from shared.errors import ErrorKind
from shared.runs import get_run
from shared.schema.models import RunState, Source, ingest_runs
from shared.timeutil import Clock
from viewer.errors import ApiError
from viewer.launch.control import RunControl

_T = ingest_runs.c


@dataclass(frozen=True, slots=True)
class Freshness:
    """How fresh an account is: its settings, its last finished run and when the next refresh is due."""

    gmail_address: str | None
    refresh: Refresh
    updated_at_unix: int | None  # the last run that ended `done`, scan or import
    scanned: bool  # a scan has completed once: refreshing is offered from then on
    next_refresh_unix: int | None  # None: off, never scanned, or waiting for the person (consent)
    needs_consent: bool  # the last scan failed for want of consent (e.g. a revoked token)


def freshness(conn: Connection) -> Freshness:
    """Read-only: the account's settings and the runs that say when it was last updated."""
    values = read_settings(conn)
    updated = conn.execute(select(func.max(_T.finished_at_unix)).where(_T.state == RunState.DONE)).scalar()
    scanned = conn.execute(
        select(_T.run_id).where(_T.source == Source.GMAIL_API, _T.state == RunState.DONE).limit(1)
    ).first()
    last_id = conn.execute(select(func.max(_T.run_id)).where(_T.source == Source.GMAIL_API)).scalar()
    last = get_run(conn, int(last_id)) if last_id is not None else None
    needs_consent = last is not None and last.error_kind == ErrorKind.AUTH_REQUIRED
    interval = values.refresh.interval_seconds
    due = None
    if interval is not None and scanned is not None and last is not None and not needs_consent:
        due = last.started_at_unix + interval
    return Freshness(
        gmail_address=values.gmail_address,
        refresh=values.refresh,
        updated_at_unix=int(updated) if updated is not None else None,
        scanned=scanned is not None,
        next_refresh_unix=due,
        needs_consent=needs_consent,
    )


def refresh_if_due(control: RunControl, *, now: float) -> int | None:
    """Starts the account's refresh scan when it is due and nothing runs; returns its run id when it did."""
    try:
        fresh = control.database.read_ready(freshness)
        if fresh is None or fresh.next_refresh_unix is None or now < fresh.next_refresh_unix:
            return None
        return control.launch(source=Source.GMAIL_API, unattended=True)
    except ApiError:
        return None  # busy, or an ingester runs (`launch` refuses then): the next tick looks again


class Refresher:
    """A daemon thread that looks at every account every `every_seconds` (the viewer's clock decides what is due)."""

    def __init__(self, *, controls: Callable[[], Iterable[RunControl]], clock: Clock, every_seconds: float) -> None:
        self._controls = controls
        self._clock = clock
        self._every = every_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="refresh", daemon=True)

    def tick(self) -> list[int | None]:
        return [refresh_if_due(control, now=self._clock()) for control in self._controls()]

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            self.tick()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
