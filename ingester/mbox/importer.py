"""The Takeout import: stream regions, count them in batches, keep the run row honest, stop cleanly on cancel.

Each batch commits together with `bytes_done` and the counters it covers, so a `kill -9` at any instant
loses nothing that a `--resume` will not redo exactly.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine

from ingester.mbox.lengths import length_cuts
from ingester.mbox.parse_pool import Ticker, parse_in_order
from ingester.mbox.segments import READ_BYTES, SEGMENT_BYTES, plan_segments
from ingester.records import MailRecord
from ingester.runs.lifecycle import ResumeHint, RunCancelled, RunLifecycle, Tally
from ingester.runs.outcome import RunResult
from ingester.runs.report import Reporter
from ingester.store.store_guard import count_batch_guarded
from shared.errors import InputFileError, RunNotFoundError
from shared.mbox_format import sniff_mbox
from shared.resume import resume_command
from shared.runs import Run
from shared.schema.models import Source
from shared.timeutil import Clock

# A commit covers at least this many records or this much time (heartbeats need one every 2 s at most). Each
# commit upserts every sender of its batch once, into a table with seven indexes: 20,000 records (the store's
# chunk) per commit took about a sixth off the write step's CPU against 5,000; larger batches gain nothing more.
BATCH_RECORDS = 20000
BATCH_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ImportRequest:
    path: Path
    include_spam_trash: bool = False
    resume_run_id: int | None = None
    launch_token: str | None = None
    # The file as the person names it, recorded on the run instead of `path` (under Docker the host's path, where
    # `path` is the container's /mbox/… or /imports/…), so what the page and `runs` show, and resume hints, work on
    # the host.
    shown_path: str | None = None
    # What is read, when not `path`: `/proc/PID/fd/N` of the file `--confine-to` opened and checked, so no name
    # swapped after the check can make the import read another file.
    read_path: Path | None = None

    def recorded_path(self) -> str:
        return self.shown_path or str(self.path.absolute())

    def source(self) -> Path:
        return self.read_path or self.path


def check_mbox_path(source: Path, *, named: Path | None = None) -> os.stat_result:
    """Refuses, before anything is written, a path that is missing, not a regular file, or not an mbox.

    `source` is what is read; `named` the file as messages name it, when that differs (a pinned descriptor).
    """
    path = named or source
    try:
        info = source.stat()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file; give the path of the .mbox file from your Takeout") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror})") from exc
    if stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        # Segments are parsed in parallel at byte offsets and a resume restarts at one: both need a seekable file.
        raise InputFileError(
            f"{path}: a pipe or device, not a file; the import reads at byte offsets (in parallel, and to resume), "
            "so save the mbox to a file first, e.g. `zcat mail.mbox.gz > mail.mbox`"
        )
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{path}: not a regular file; give the .mbox file itself, not a folder")
    try:
        with source.open("rb") as handle:
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


class _Importer:
    def __init__(self, *, life: RunLifecycle, request: ImportRequest, parse_workers: int) -> None:
        self.life = life
        self.request = request
        self.parse_workers = parse_workers

    def start_run(self, info: os.stat_result, print_: str) -> int:
        """Creates the run, or reopens the one to resume; returns the byte offset to read from."""
        request, life = self.request, self.life
        where = request.recorded_path()
        if request.resume_run_id is None:
            life.create(mbox_path=where, bytes_total=info.st_size, mbox_fingerprint=print_)
            return 0
        run = life.reopen(request.resume_run_id, check=self._same_file)
        if run.mbox_fingerprint == print_:
            return run.bytes_done
        note = f"{request.path} is not the file run {run.run_id} read (or it changed); re-reading from the start"
        life.tally = Tally(new=run.messages_new)
        with life.batch([note], mbox_path=where, mbox_fingerprint=print_, bytes_total=info.st_size, bytes_done=0):
            pass
        return 0

    def _same_file(self, run: Run) -> None:
        """Refuses to resume a run that read another file: its counts would mix with this file's."""
        recorded = run.mbox_path
        if recorded is None or recorded == self.request.shown_path:
            return
        if Path(recorded).resolve() != self.request.path.resolve():
            raise RunNotFoundError(
                f"run {run.run_id} imported {recorded}, not {self.request.shown_path or self.request.path}; resume it "
                "with that file, or start a new import without --resume"
            )

    def run(self) -> RunResult:
        source = self.request.source()
        info = check_mbox_path(source, named=self.request.path)
        offset = self.start_run(info, fingerprint(source, info))
        self.life.reporter.start(description=f"Importing {self.request.path.name}", total=info.st_size, done=offset)
        with self.life.guard(heartbeat=False):
            self._consume(offset, info.st_size)
        return self.life.result()

    def _consume(self, offset: int, size: int) -> None:
        """Counts regions from `offset` to the end, then ends the run (`cancelled` if asked to stop)."""
        life = self.life
        tasks = plan_segments(
            self.request.source(),
            start=offset,
            size=size,
            include_spam_trash=self.request.include_spam_trash,
            now=life.clock(),
            length_cuts=self._length_cuts(offset),
        )
        done = offset
        batch: list[MailRecord] = []
        starts: list[int] = []
        warnings: list[str] = []
        last_commit = life.clock()
        for result in parse_in_order(tasks, workers=self.parse_workers, idle=self._idle):
            life.tally.seen += result.seen
            life.tally.skipped += result.skipped
            life.tally.excluded += result.excluded
            if result.end is not None:
                done = result.end
            batch += result.records
            starts += result.starts
            warnings += result.warnings
            # Segments of large messages hold few records: commit by size or time, not once per segment.
            if life.cancel.is_set() or len(batch) >= BATCH_RECORDS or life.clock() - last_commit >= BATCH_SECONDS:
                self._commit(batch, starts, warnings, done)
                batch, starts, warnings, last_commit = [], [], [], life.clock()
            if life.cancel.is_set():
                break
        with life.batch(warnings, bytes_done=done) as conn:
            self._store(conn, batch, starts, warnings)
            life.finish(conn, cancelled=life.cancel.is_set(), partial=life.tally.skipped > 0)
        life.reporter.progress(done=done, seen=life.tally.seen, new=life.tally.new)

    def _length_cuts(self, offset: int) -> tuple[int, ...] | None:
        """Whether the file is Content-Length framed throughout (mboxcl2), judged on the whole file on every run,
        a resume included, so a file is never framed two ways; the message starts segments begin at if so."""
        with self.request.source().open("rb", buffering=0) as stream:
            return length_cuts(
                stream, segment_bytes=SEGMENT_BYTES, chunk=READ_BYTES, resume_at=offset, tick=Ticker(self._idle)
            )

    def _idle(self) -> None:
        """Called about every second while parse workers are busy: beat, and stop waiting once cancelled.

        What was parsed but not committed is simply read again by a resume (`bytes_done` commits with counts).
        """
        self.life.beat()
        if self.life.cancel.is_set():
            raise RunCancelled()

    def _commit(self, batch: list[MailRecord], starts: list[int], warnings: list[str], done: int) -> None:
        life = self.life
        with life.batch(warnings, bytes_done=done) as conn:
            self._store(conn, batch, starts, warnings)
        life.reporter.progress(done=done, seen=life.tally.seen, new=life.tally.new)

    def _store(self, conn: Connection, batch: list[MailRecord], starts: list[int], warnings: list[str]) -> None:
        """Counts the batch; a message the database refuses is skipped with its offsets (the run ends partial)."""
        tally = self.life.tally
        outcome, rejected = count_batch_guarded(conn, batch, source=Source.MBOX, run_id=self.life.run_id)
        tally.new += outcome.new
        for refused in rejected:
            start = starts[refused.index]
            end = start + batch[refused.index].size_bytes
            tally.seen -= 1
            tally.skipped += 1
            warnings.append(f"skipped bytes {start}-{end}: the database refused its values ({refused.reason})")


def run_import(
    *,
    engine: Engine,
    request: ImportRequest,
    reporter: Reporter,
    cancel: threading.Event,
    clock: Clock,
    parse_workers: int = 0,
    resume_hint: ResumeHint | None = None,
) -> RunResult:
    """Imports `request.path` into the database behind `engine` (the caller holds the ingest lock)."""
    life = RunLifecycle(
        engine,
        source=Source.MBOX,
        reporter=reporter,
        cancel=cancel,
        clock=clock,
        launch_token=request.launch_token,
        resume_hint=resume_hint
        or (lambda run_id: resume_command(source=Source.MBOX, run_id=run_id, mbox_path=str(request.path))),
    )
    return _Importer(life=life, request=request, parse_workers=parse_workers).run()
