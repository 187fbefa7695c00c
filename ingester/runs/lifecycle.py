"""One run row's life, the same for import, scan and backfill: create or reopen, progress, heartbeat, warnings,
consent, cancel, failure and finish. The work loops count; only this module writes `ingest_runs` for them.

Every write happens on the caller's thread through the caller's engine, except the background heartbeat, which
has its own connection (`ingester.runs.heartbeat`): no SQLite connection is ever used by two threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from ingester.runs.heartbeat import Heartbeat, database_file
from ingester.runs.outcome import RunResult, refuse_resume
from ingester.runs.report import Reporter
from shared.db_errors import database_error
from shared.errors import (
    DatabaseError,
    ErrorKind,
    GmailApiError,
    GmailAuthError,
    GmailStatsError,
    InputFileError,
)
from shared.runs import Run, add_warnings, create_run, finish_run, get_run, reopen_run, update_run
from shared.schema.models import RunOutcome, RunState, Source
from shared.timeutil import Clock


class RunCancelled(Exception):
    """Raised by work that stops at once on a cancel request; `guard` ends the run `cancelled`. A pipeline's own
    cancellations subclass it, so the run machinery never needs to know the pipeline."""


# The resume command for a run id, complete and copy-pasteable (see `shared.resume`).
ResumeHint = Callable[[int], str]


@dataclass(slots=True)
class Tally:
    """The run's counters as committed so far (they always match the row after each `batch`)."""

    seen: int = 0
    new: int = 0
    skipped: int = 0
    excluded: int = 0

    def columns(self) -> dict[str, int]:
        return {
            "messages_seen": self.seen,
            "messages_new": self.new,
            "messages_skipped": self.skipped,
            "messages_excluded": self.excluded,
        }


class RunLifecycle:
    """Owns one run row from `create`/`reopen` to its end; `guard` maps every way out to the row's final state."""

    def __init__(
        self,
        engine: Engine,
        *,
        source: Source,
        reporter: Reporter,
        cancel: threading.Event,
        clock: Clock,
        launch_token: str | None,
        resume_hint: ResumeHint,
    ) -> None:
        self.engine = engine
        self.source = source
        self.reporter = reporter
        self.cancel = cancel
        self.clock = clock
        self.launch_token = launch_token
        self.resume_hint = resume_hint
        self.run_id = 0
        self.resume_command = ""
        self.tally = Tally()
        self.warnings_count = 0
        self._ended: tuple[RunState, RunOutcome] | None = None

    # --- the row's start ---------------------------------------------------------------------------------------
    def create(self, **columns: Any) -> None:
        """Inserts a new `running` run with the given extra columns (mbox path, totals, ...)."""
        with self.engine.begin() as conn:
            self.run_id = create_run(
                conn, source=self.source, pid=os.getpid(), now=self.clock(), launch_token=self.launch_token
            )
            if columns:
                update_run(conn, self.run_id, now=self.clock(), **columns)
        self.resume_command = self.resume_hint(self.run_id)

    def reopen(self, run_id: int, *, check: Callable[[Run], None] | None = None) -> Run:
        """Puts run `run_id` back to `running` and carries its counters on; returns the row as it was.

        Refuses (`RunNotFoundError`, nothing written) an unknown run, one of another source, a finished one, or
        whatever `check` refuses.
        """
        with self.engine.begin() as conn:
            run = get_run(conn, run_id)
            refuse_resume(run, run_id=run_id, source=self.source)
            assert run is not None
            if check is not None:
                check(run)
            reopen_run(conn, run_id, pid=os.getpid(), now=self.clock(), launch_token=self.launch_token)
        self.run_id = run_id
        self.resume_command = self.resume_hint(run_id)
        self.tally = Tally(run.messages_seen, run.messages_new, run.messages_skipped, run.messages_excluded)
        self.warnings_count = run.warnings_count
        return run

    # --- progress ----------------------------------------------------------------------------------------------
    @contextmanager
    def batch(self, warnings: list[str] | None = None, /, **values: Any) -> Iterator[Connection]:
        """One transaction of counted work: after the block, the tally, `warnings` and `values` commit with it.

        The block may still change the tally and append to `warnings`; both are read when it ends.
        """
        pending = warnings if warnings is not None else []
        with self.engine.begin() as conn:
            yield conn
            add_warnings(conn, self.run_id, pending)
            update_run(conn, self.run_id, now=self.clock(), **self.tally.columns(), **values)
        self.warnings_count += len(pending)
        for text in pending:
            self.reporter.warning(text)

    def beat(self) -> None:
        """A heartbeat from the caller's own thread (the import beats while it waits on parse workers)."""
        with self.engine.begin() as conn:
            update_run(conn, self.run_id, now=self.clock())

    def warn(self, warnings: list[str]) -> None:
        if not warnings:
            return
        with self.engine.begin() as conn:
            add_warnings(conn, self.run_id, warnings)
        self.warnings_count += len(warnings)
        for text in warnings:
            self.reporter.warning(text)

    def awaiting_consent(self, url: str) -> None:
        with self.engine.begin() as conn:
            update_run(conn, self.run_id, now=self.clock(), state=str(RunState.AWAITING_AUTH), auth_url=url)

    def authorised(self) -> None:
        with self.engine.begin() as conn:
            update_run(conn, self.run_id, now=self.clock(), state=str(RunState.RUNNING), auth_url=None)

    # --- the row's end -----------------------------------------------------------------------------------------
    def finish(self, conn: Connection, *, cancelled: bool, partial: bool) -> None:
        """Ends the run inside the caller's last transaction: `cancelled`, or `done` complete/partial."""
        state = RunState.CANCELLED if cancelled else RunState.DONE
        outcome = RunOutcome.PARTIAL if cancelled or partial else RunOutcome.COMPLETE
        finish_run(conn, self.run_id, state=state, outcome=outcome, now=self.clock())
        self._ended = (state, outcome)

    def _end(self, state: RunState, *, kind: str | None = None, error: str | None = None) -> None:
        with self.engine.begin() as conn:
            finish_run(
                conn,
                self.run_id,
                state=state,
                outcome=RunOutcome.PARTIAL,
                now=self.clock(),
                error_kind=kind,
                error=error,
            )
        self._ended = (state, RunOutcome.PARTIAL)

    @contextmanager
    def guard(self, *, heartbeat: bool) -> Iterator[None]:
        """Runs the work (with a background heartbeat if asked) and records how it ended, whatever the way out.

        A cancel ends the run `cancelled`; our errors and database or I/O failures end it `failed` with a kind and
        the resume command, and are re-raised as one-line errors for `cli.main`.
        """
        hint = f"; resume with: {self.resume_command}"
        where = database_file(self.engine)
        with ExitStack() as stack:
            if heartbeat:
                stack.enter_context(Heartbeat(self.engine, self.run_id, clock=self.clock))
            try:
                yield
            except RunCancelled:
                self._end(RunState.CANCELLED)
            except GmailAuthError as exc:
                self._end(RunState.FAILED, kind=exc.kind, error=str(exc))
                raise
            except GmailApiError as exc:
                kind = ErrorKind.RATE_LIMITED if exc.kind == ErrorKind.RATE_LIMITED else ErrorKind.GMAIL_API
                self._end(RunState.FAILED, kind=kind, error=str(exc) + hint)
                raise GmailApiError(str(exc) + hint, kind=kind, status=exc.status) from exc
            except OperationalError as exc:
                # The database itself may be the failure; then the next ingester marks the run abandoned.
                with contextlib.suppress(OperationalError):
                    self._end(RunState.FAILED, kind=ErrorKind.DB, error=f"database error: {exc.orig}")
                raise DatabaseError(f"{database_error(where, exc)}{hint}") from exc
            except OSError as exc:
                self._end(RunState.FAILED, kind=ErrorKind.IO, error=f"reading failed: {exc}")
                raise InputFileError(f"reading failed ({exc}){hint}") from exc
            except BaseException as exc:
                if self._ended is None and not isinstance(exc, KeyboardInterrupt | SystemExit):
                    self._end(
                        RunState.FAILED,
                        kind=exc.kind if isinstance(exc, GmailStatsError) else ErrorKind.INTERNAL,
                        error=f"{exc}{hint}",
                    )
                raise
            finally:
                self.reporter.finish()

    def result(self, *, detail: str = "") -> RunResult:
        """The run as it ended (call after `guard`); a run left without `finish` counts as cancelled."""
        state, outcome = self._ended or (RunState.CANCELLED, RunOutcome.PARTIAL)
        t = self.tally
        return RunResult(
            self.run_id,
            self.source,
            state,
            outcome,
            t.seen,
            t.new,
            t.skipped,
            t.excluded,
            self.resume_command,
            detail,
            self.warnings_count,
        )
