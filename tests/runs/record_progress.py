"""Records the committed progress of a real import as the viewer would see it, for tests/runs/test_eta.py.

`python -m tests.runs.record_progress OUT.json [MESSAGES]`: imports a generated mbox with a real ingester process and
polls its run row every 20 ms (a read-only connection), writing each change of `bytes_done` with the time it was
first seen, the file size and the time the run ended.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from tests.support.factories import mbox_bytes
from tests.support.processes import start_import


def record(out: Path, messages: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        mbox, db = Path(tmp) / "big.mbox", Path(tmp) / "stats.db"
        mbox.write_bytes(mbox_bytes(messages, senders=500, tag="eta"))
        process = start_import(db, mbox, "--quiet")
        started = time.monotonic()
        samples: list[list[float]] = []
        total = 0
        while process.poll() is None:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    row = conn.execute("SELECT bytes_done, bytes_total, messages_seen FROM ingest_runs").fetchone()
            except sqlite3.OperationalError:
                row = None  # not created or migrated yet
            if row is not None and (not samples or samples[-1][1] != row[0]):
                total = int(row[1] or 0)
                samples.append([round(time.monotonic() - started, 3), int(row[0]), int(row[2])])
            time.sleep(0.02)
        ended = round(time.monotonic() - started, 3)
        if process.returncode != 0:
            raise SystemExit(f"the import failed: {process.stderr.read() if process.stderr else ''}")
    document = {"source": "mbox", "messages": messages, "bytes_total": total, "ended_at": ended, "samples": samples}
    out.write_text(json.dumps(document, indent=0) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 400_000)
