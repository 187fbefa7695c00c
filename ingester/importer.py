"""The Takeout import: stream regions, count them in batches, keep the run row honest, stop cleanly on cancel.

Each batch commits together with `bytes_done` and the counters it covers, so a `kill -9` at any instant
loses nothing that a `--resume` will not redo exactly.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from ingester.parse_pool import parse_in_order
from ingester.records import MailRecord
from ingester.report import Reporter
from ingester.segments import plan_segments
from ingester.store import count_batch
from shared.errors import InputFileError, RunNotFoundError
from shared.mbox_format import sniff_mbox
from shared.models import RunOutcome, RunState, Source
from shared.runs import Run, add_warnings, create_run, finish_run, get_run, reopen_run, update_run
from shared.timeutil import Clock

# A commit covers at least this many records or this much time (heartbeats need one every 2 s at most).
BATCH_RECORDS = 5000
BATCH_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class ImportRequest:
    path: Path
    include_spam_trash: bool = False
    resume_run_id: int | None = None
    launch_token: str | None = None


@dataclass(frozen=True, slots=True)
class ImportResult:
    run_id: int
    state: RunState
    outcome: RunOutcome
    messages_seen: int
    messages_new: int
    messages_skipped: int
    messages_excluded: int

    def resume_hint(self, path: Path) -> str:
        return f"gmail-stats import {shlex.quote(str(path))} --resume {self.run_id}"


def check_mbox_path(path: Path) -> os.stat_result:
    """Refuses, before anything is written, a path that is missing, not a regular file, or not an mbox."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file; give the path of the .mbox file from your Takeout") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror})") from exc
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{path}: not a regular file; give the .mbox file itself, not a folder")
    try:
        with path.open("rb") as handle:
            sniffed = sniff_mbox(handle)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror})") from exc
    if sniffed.problem is not None:
        raise InputFileError(
            f"{path}: not an mbox file ({sniffed.reason}); export Mail from takeout.google.com in mbox format"
        )
    return info


def fingerprint(path: Path, info: os.stat_result) -> str:
    """Size, mtime and a hash of the first 64 KiB: cheap, and changes when Takeout writes a new export."""
    with path.open("rb") as handle:
        digest = hashlib.sha256(handle.read(64 * 1024)).hexdigest()
    return f"{info.st_size}:{info.st_mtime_ns}:{digest}"


@dataclass(slots=True)
class _Tally:
    seen: int = 0
    new: int = 0
    skipped: int = 0
    excluded: int = 0


class _Importer:
    def __init__(
        self,
        *,
        engine: Engine,
        request: ImportRequest,
        reporter: Reporter,
        cancel: threading.Event,
        clock: Clock,
        parse_workers: int,
    ) -> None:
        self.parse_workers = parse_workers
        self.engine = engine
        self.request = request
        self.reporter = reporter
        self.cancel = cancel
        self.clock = clock

    def start_run(self, info: os.stat_result, print_: str) -> tuple[int, int, _Tally]:
        """Creates the run, or reopens the one to resume; returns (run_id, start offset, counters so far)."""
        request = self.request
        with self.engine.begin() as conn:
            if request.resume_run_id is None:
                run_id = create_run(
                    conn,
                    source=Source.MBOX,
                    pid=os.getpid(),
                    now=self.clock(),
                    mbox_path=str(request.path.absolute()),
                    bytes_total=info.st_size,
                    mbox_fingerprint=print_,
                    launch_token=request.launch_token,
                )
                return run_id, 0, _Tally()
            run = get_run(conn, request.resume_run_id)
            self._check_resumable(run)
            assert run is not None
            reopen_run(conn, run.run_id, pid=os.getpid(), now=self.clock(), launch_token=request.launch_token)
            if run.mbox_fingerprint == print_:
                tally = _Tally(run.messages_seen, run.messages_new, run.messages_skipped, run.messages_excluded)
                return run.run_id, run.bytes_done, tally
            note = f"{request.path} is not the file run {run.run_id} read (or it changed); re-reading from the start"
            add_warnings(conn, run.run_id, [note])
            self.reporter.warning(note)
            update_run(
                conn,
                run.run_id,
                now=self.clock(),
                mbox_path=str(request.path.absolute()),
                mbox_fingerprint=print_,
                bytes_total=info.st_size,
                bytes_done=0,
                messages_seen=0,
                messages_skipped=0,
                messages_excluded=0,
            )
            return run.run_id, 0, _Tally(new=run.messages_new)

    def _check_resumable(self, run: Run | None) -> None:
        wanted = self.request.resume_run_id
        if run is None:
            raise RunNotFoundError(f"there is no run {wanted}; see `gmail-stats runs`")
        if run.source != Source.MBOX:
            raise RunNotFoundError(f"run {wanted} is a {run.source} run, not an mbox import; resume it with `scan`")

    def run(self) -> ImportResult:
        info = check_mbox_path(self.request.path)
        run_id, offset, tally = self.start_run(info, fingerprint(self.request.path, info))
        self.reporter.start(description=f"Importing {self.request.path.name}", total=info.st_size, done=offset)
        try:
            cancelled = self._consume(run_id, offset, info.st_size, tally)
        except OSError as exc:
            self._fail(run_id, "io", f"reading {self.request.path} failed: {exc}")
            raise InputFileError(f"{self.request.path}: reading failed ({exc}); resume with --resume {run_id}") from exc
        finally:
            self.reporter.finish()
        state = RunState.CANCELLED if cancelled else RunState.DONE
        outcome = RunOutcome.PARTIAL if cancelled or tally.skipped else RunOutcome.COMPLETE
        with self.engine.begin() as conn:
            finish_run(conn, run_id, state=state, outcome=outcome, now=self.clock())
        return ImportResult(run_id, state, outcome, tally.seen, tally.new, tally.skipped, tally.excluded)

    def _fail(self, run_id: int, kind: str, message: str) -> None:
        with self.engine.begin() as conn:
            finish_run(
                conn,
                run_id,
                state=RunState.FAILED,
                outcome=RunOutcome.PARTIAL,
                now=self.clock(),
                error_kind=kind,
                error=message,
            )

    def _consume(self, run_id: int, offset: int, size: int, tally: _Tally) -> bool:
        """Counts regions from `offset` to the end; returns True when stopped by a cancel request."""
        tasks = plan_segments(
            self.request.path,
            start=offset,
            size=size,
            include_spam_trash=self.request.include_spam_trash,
            now=self.clock(),
        )
        done = offset
        batch: list[MailRecord] = []
        warnings: list[str] = []
        last_commit = self.clock()
        for result in parse_in_order(tasks, workers=self.parse_workers, idle=lambda: self._heartbeat(run_id)):
            tally.seen += result.seen
            tally.skipped += result.skipped
            tally.excluded += result.excluded
            if result.end is not None:
                done = result.end
            batch += result.records
            warnings += result.warnings
            # Segments of large messages hold few records: commit by size or time, not once per segment.
            if self.cancel.is_set() or len(batch) >= BATCH_RECORDS or self.clock() - last_commit >= BATCH_SECONDS:
                self._commit(run_id, batch, warnings, tally, done)
                batch, warnings, last_commit = [], [], self.clock()
            if self.cancel.is_set():
                return True
        self._commit(run_id, batch, warnings, tally, done)
        return self.cancel.is_set()

    def _heartbeat(self, run_id: int) -> None:
        with self.engine.begin() as conn:
            update_run(conn, run_id, now=self.clock())

    def _commit(self, run_id: int, batch: list[MailRecord], warnings: list[str], tally: _Tally, done: int) -> None:
        with self.engine.begin() as conn:
            outcome = count_batch(conn, batch, source=Source.MBOX, run_id=run_id)
            tally.new += outcome.new
            add_warnings(conn, run_id, warnings)
            update_run(
                conn,
                run_id,
                now=self.clock(),
                bytes_done=done,
                messages_seen=tally.seen,
                messages_new=tally.new,
                messages_skipped=tally.skipped,
                messages_excluded=tally.excluded,
            )
        for text in warnings:
            self.reporter.warning(text)
        self.reporter.progress(done=done, seen=tally.seen, new=tally.new)


def run_import(
    *,
    engine: Engine,
    request: ImportRequest,
    reporter: Reporter,
    cancel: threading.Event,
    clock: Clock,
    parse_workers: int = 0,
) -> ImportResult:
    """Imports `request.path` into the database behind `engine` (the caller holds the ingest lock)."""
    importer = _Importer(
        engine=engine, request=request, reporter=reporter, cancel=cancel, clock=clock, parse_workers=parse_workers
    )
    return importer.run()
