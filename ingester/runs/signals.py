"""SIGTERM/SIGINT become a cancel request; a second signal aborts at once.

Python as PID 1 in a container gets no default SIGTERM handling, so the handlers are always installed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

ABORT_EXIT_CODE = 130
_HANDLED = (signal.SIGTERM, signal.SIGINT)
CANCELLING_NOTE = "cancelling: finishing the work in flight, which is kept; a second signal stops at once\n"


def _no_run() -> str:
    return "committed work is kept; see `gmail-stats runs` for the run to resume"


@contextmanager
def cancel_on_signals(cancel: threading.Event, *, abort_note: Callable[[], str] = _no_run) -> Iterator[None]:
    """Within the block, the first signal sets `cancel` and says so; the next one prints `abort_note()` and exits.

    Committed work is safe either way: every batch commits with the progress it covers.
    """

    def handle(signum: int, _frame: FrameType | None) -> None:
        if cancel.is_set():
            os.write(2, f"second signal: aborting now; {abort_note()}\n".encode())
            os._exit(ABORT_EXIT_CODE)
        cancel.set()
        # Said at once: winding down (the calls and batch in flight) can take a moment, and a person should know
        # the keystroke was heard.
        os.write(2, ("\n" if os.isatty(2) else "").encode() + CANCELLING_NOTE.encode())  # below a progress line

    previous = {sig: signal.signal(sig, handle) for sig in _HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
