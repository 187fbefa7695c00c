"""How an ingester tells a person what is happening: the `Reporter` seam and its terminal implementations.

The only module besides `cli` that prints. Progress bars appear on a TTY only, and never with `--quiet`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from rich.progress import TaskID


class Reporter(Protocol):
    def start(self, *, description: str, total: int | None, done: int) -> None: ...
    def progress(self, *, done: int, seen: int, new: int) -> None: ...
    def note(self, text: str) -> None: ...
    def warning(self, text: str) -> None: ...
    def finish(self) -> None: ...


class QuietReporter:
    """`--quiet`: warnings and notes are on the run row; only the cancel/resume hint is printed."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def start(self, *, description: str, total: int | None, done: int) -> None:
        pass

    def progress(self, *, done: int, seen: int, new: int) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def warning(self, text: str) -> None:
        pass

    def finish(self) -> None:
        pass


class LineReporter:
    """No TTY: plain lines on stderr, warnings only with `--verbose`."""

    def __init__(self, *, verbose: bool, stream: TextIO | None = None) -> None:
        self._verbose = verbose
        self._stream = stream or sys.stderr

    def start(self, *, description: str, total: int | None, done: int) -> None:
        print(description, file=self._stream, flush=True)

    def progress(self, *, done: int, seen: int, new: int) -> None:
        pass

    def note(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def warning(self, text: str) -> None:
        if self._verbose:
            print(f"warning: {text}", file=self._stream, flush=True)

    def finish(self) -> None:
        pass


class BarReporter:
    """A rich progress bar on the terminal (bytes for imports, messages for scans)."""

    def __init__(self, *, verbose: bool, unit_bytes: bool) -> None:
        # Imported here: rich costs ~0.1 s of start-up that quiet and non-TTY runs should not pay.
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._verbose = verbose
        self._console = Console(stderr=True)
        columns = [TextColumn("[progress.description]{task.description}"), BarColumn()]
        if unit_bytes:
            columns += [DownloadColumn(), TransferSpeedColumn()]
        columns += [TextColumn("{task.fields[counts]}"), TimeRemainingColumn()]
        self._progress = Progress(*columns, console=self._console, transient=False)
        self._task: TaskID | None = None

    def start(self, *, description: str, total: int | None, done: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, completed=done, counts="")

    def progress(self, *, done: int, seen: int, new: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=done, counts=f"{seen:,} seen, {new:,} new")

    def note(self, text: str) -> None:
        self._console.print(text, markup=False, highlight=False)

    def warning(self, text: str) -> None:
        if self._verbose:
            self._console.print(f"warning: {text}", markup=False, highlight=False)

    def finish(self) -> None:
        self._progress.stop()


def make_reporter(*, quiet: bool, verbose: bool, unit_bytes: bool) -> Reporter:
    if quiet:
        return QuietReporter()
    if sys.stderr.isatty():
        return BarReporter(verbose=verbose, unit_bytes=unit_bytes)
    return LineReporter(verbose=verbose)
