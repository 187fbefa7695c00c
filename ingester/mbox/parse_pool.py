"""Parallel parsing: segments go round-robin to child `parse_worker` processes and come back in file order.

The importer's main process only writes the database, so on two cores parsing and writing overlap. Small
files, or `parse_workers=0`, parse in-process.
"""

from __future__ import annotations

import contextlib
import fcntl
import select
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from ingester.mbox.parse_worker import read_frame, write_frame
from ingester.mbox.segments import SegmentResult, SegmentTask, parse_segment
from shared.errors import ErrorKind, GmailStatsError

# Tasks queued per worker, and the size asked for its result pipe (Linux; elsewhere the default stays): a worker
# writes each finished segment's result (~100 KB pickled for 1 MiB of small messages) into the pipe and goes on
# parsing while the writer commits. With the default 64 KiB pipe it blocked on its first result, so on two cores
# one stood idle during every commit.
IN_FLIGHT_PER_WORKER = 8
RESULT_PIPE_BYTES = 1024 * 1024
IDLE_CALLBACK_SECONDS = 1.0


class ParseWorkerError(GmailStatsError):
    """A parse worker died or answered nonsense; the run can be resumed."""

    kind = ErrorKind.IO


class _Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ingester.mbox.parse_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            bufsize=0,  # unbuffered: `select` on the pipe then tells the truth about unread results
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.tasks: IO[bytes] = self.process.stdin
        self.results: IO[bytes] = self.process.stdout
        _grow_pipe(self.results)

    def stop(self, *, abandon: bool) -> None:
        """Closes the pipes and reaps the worker; one whose results nobody will read (a cancel, an error) is
        killed at once rather than waited for, so a cancel never waits out a segment parse per worker."""
        if abandon:
            self.process.kill()  # it only reads the mbox and answers on its pipe: nothing to lose
        for stream in (self.tasks, self.results):
            with contextlib.suppress(OSError):  # a worker that died first leaves a broken pipe
                stream.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _grow_pipe(stream: IO[bytes]) -> None:
    """Asks for a larger pipe buffer; without `F_SETPIPE_SZ` (not Linux) or permission, the default stays."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is not None:
        with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size for an unprivileged user
            fcntl.fcntl(stream.fileno(), set_size, RESULT_PIPE_BYTES)


class Ticker:
    """Calls `idle` from inside an in-process read of the file (a parse, the Content-Length walk) at most once per
    `IDLE_CALLBACK_SECONDS` (called per read)."""

    def __init__(self, idle: Callable[[], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self.clock = clock
        self.last = clock()

    def __call__(self) -> None:
        now = self.clock()
        if now - self.last >= IDLE_CALLBACK_SECONDS:
            self.last = now
            self.idle()


def parse_in_order(
    tasks: Sequence[SegmentTask],
    *,
    workers: int,
    idle: Callable[[], None],
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[SegmentResult]:
    """Yields each task's result in task order; calls `idle` about every second while waiting on workers, or,
    parsing in-process, from inside the parse (it may raise `RunCancelled` to stop there)."""
    if workers <= 0 or len(tasks) <= 1:
        tick = Ticker(idle, clock)
        for task in tasks:
            yield parse_segment(task, tick)
        return
    pool = [_Worker() for _ in range(min(workers, len(tasks)))]
    try:
        pending: deque[_Worker] = deque()
        queue = iter(tasks)

        def submit(worker: _Worker) -> None:
            task = next(queue, None)
            if task is not None:
                write_frame(worker.tasks, task)
                pending.append(worker)

        for _ in range(IN_FLIGHT_PER_WORKER):
            for worker in pool:
                submit(worker)
        while pending:
            worker = pending.popleft()
            while not select.select([worker.results], [], [], IDLE_CALLBACK_SECONDS)[0]:
                idle()
            result = read_frame(worker.results)
            if not isinstance(result, SegmentResult):
                raise ParseWorkerError(f"a parse worker stopped unexpectedly (exit code {worker.process.poll()})")
            submit(worker)
            yield result
    finally:
        for worker in pool:
            worker.stop(abandon=bool(pending))
