"""A background heartbeat: `updated_at_unix` of the open run every second, whatever the main thread waits on.

A scan can wait for consent, quota or backoff for longer than the 2 s the run-row contract allows between beats.
The beat writes through its own connection, opened and closed on its own thread: a SQLite connection used by two
threads lets one thread's statement land inside the other's transaction.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from shared.db import writer_engine
from shared.runs import update_run
from shared.timeutil import Clock

INTERVAL_SECONDS = 1.0


def database_file(engine: Engine) -> Path:
    """The file behind `engine`'s main database, as SQLite itself resolved it."""
    with engine.connect() as conn:
        name = conn.execute(text("SELECT file FROM pragma_database_list WHERE name = 'main'")).scalar_one()
    return Path(name)


class Heartbeat:
    def __init__(self, engine: Engine, run_id: int, *, clock: Clock, interval: float = INTERVAL_SECONDS) -> None:
        self._db_path = database_file(engine)
        self._run_id = run_id
        self._clock = clock
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def _beat(self) -> None:
        engine = writer_engine(self._db_path)  # built, used and disposed on this thread only
        try:
            while not self._stop.wait(self._interval):
                try:
                    with engine.begin() as conn:
                        update_run(conn, self._run_id, now=self._clock())
                except OperationalError:  # busy past the timeout: the next beat tries again
                    continue
        finally:
            engine.dispose()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
