"""A fake ingester for launch tests: the real lock, session and run rows, but slow, scripted progress.

Usage: `python -m tests.fakes.ingester MODE (import PATH | scan) [--resume N] --quiet`, with `GMAIL_STATS_DB` and
`GMAIL_STATS_LAUNCH_TOKEN` set like the viewer sets them. MODE `slow` cancels cleanly on SIGTERM; `stubborn`
ignores SIGTERM (only SIGKILL stops it); `race` loses a lock race: a forked child takes the lock for 3 s and the
fake exits 75 without a run row, as an ingester does when a terminal one started first.
Progress: 1,000 messages (and 100 KB) every 0.2 s, up to 200 steps.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from ingester.account_command import set_settings
from ingester.runs.session import ingest_session
from ingester.runs.signals import cancel_on_signals
from ingester.settings import IngesterSettings
from shared.accounts import account_file
from shared.errors import LockHeldError
from shared.lock import IngestLock
from shared.runs import create_run, finish_run, update_run
from shared.schema.models import RunOutcome, RunState, Source

STEP_SECONDS = 0.2
STEPS = 200


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def main(argv: list[str]) -> int:
    mode, command = argv[0], argv[1]
    account = _flag(argv, "--account")
    db = account_file(Path(os.environ["GMAIL_STATS_DB"]), account)  # `--account` as the real ingester reads it
    if command == "account":  # the real settings change: it is quick, and the viewer checks what it stored
        settings = IngesterSettings(db=Path(os.environ["GMAIL_STATS_DB"]), account=account)
        set_settings(settings, address=_flag(argv, "--address"), refresh=_flag(argv, "--refresh"))
        return 0
    token = os.environ.get("GMAIL_STATS_LAUNCH_TOKEN")
    cancel = threading.Event()
    if mode == "race":
        return lose_the_race(db)
    print(f"fake ingester {mode} {command} starting", file=sys.stderr, flush=True)
    try:
        with cancel_on_signals(cancel), ingest_session(db, clock=time.time) as engine:
            if mode == "stubborn":
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            source = Source.MBOX if command == "import" else Source.GMAIL_API
            with engine.begin() as conn:
                run_id = create_run(
                    conn,
                    source=source,
                    pid=os.getpid(),
                    now=time.time(),
                    bytes_total=STEPS * 100_000 if source is Source.MBOX else None,
                    launch_token=token,
                    mbox_path=argv[2] if source is Source.MBOX else None,
                )
                if source is Source.GMAIL_API:
                    update_run(conn, run_id, now=time.time(), total_estimate=STEPS * 1000)
            for step in range(1, STEPS + 1):
                if cancel.wait(STEP_SECONDS):
                    break
                with engine.begin() as conn:
                    update_run(conn, run_id, now=time.time(), messages_seen=step * 1000, bytes_done=step * 100_000)
                print(f"step {step}", file=sys.stderr, flush=True)
            state = RunState.CANCELLED if cancel.is_set() else RunState.DONE
            outcome = RunOutcome.PARTIAL if cancel.is_set() else RunOutcome.COMPLETE
            with engine.begin() as conn:
                finish_run(conn, run_id, state=state, outcome=outcome, now=time.time())
    except LockHeldError as exc:
        print(f"gmail-stats: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def lose_the_race(db: Path) -> int:
    lock = IngestLock(db)
    lock.acquire()
    if os.fork() == 0:  # the "other ingester": holds the inherited lock, then ends by itself
        time.sleep(3)
        os._exit(0)
    print(f"gmail-stats: another ingester is already running against {db}", file=sys.stderr, flush=True)
    os._exit(LockHeldError.exit_code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
