"""A background heartbeat: `updated_at_unix` of the open run every second, whatever the main thread waits on.

A scan can wait for consent, quota or backoff for longer than the 2 s the run-row contract allows between beats.
The beat writes through its own connection: on the main thread's shared one, its BEGIN would fail inside the main
thread's transaction and the rollback that follows would silently undo the main thread's uncommitted work.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from shared.db import writer_engine
from shared.runs import update_run
from shared.timeutil import Clock

INTERVAL_SECONDS = 1.0


class Heartbeat:
    def __init__(self, engine: Engine, run_id: int, *, clock: Clock) -> None:
        with engine.connect() as conn:  # the main thread's connection, asked once, before the thread starts
            file = str(conn.exec_driver_sql("PRAGMA database_list").all()[0][2])
        self._engine = writer_engine(Path(file))
        self._run_id = run_id
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(INTERVAL_SECONDS):
            try:
                with self._engine.begin() as conn:
                    update_run(conn, self._run_id, now=self._clock())
            except OperationalError:  # busy past the timeout: the next beat tries again
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._engine.dispose()
