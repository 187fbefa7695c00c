"""The cost of "always fresh": the viewer's scheduled refresh of an unchanged mailbox, in Gmail API units.

A 5,000-message mailbox in the fake Google is scanned once; then the viewer's refresh timer (the real `Refresher`,
`RunControl` and process launcher, a real `gmail-stats scan --unattended` child each time) starts `--refreshes`
incremental scans, each after its interval is made to have passed (the last run row is backdated). Every call the
fake answers is priced at Gmail's per-method quota units; the table gives the units per refresh and per day for
the hourly and daily settings. Run: `.venv/bin/python -m bench refresh [--refreshes N]`.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from fastapi.testclient import TestClient

from tests.conftest import ingester_env
from tests.fakes.google import COSTS, FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox
from tests.support.polling import wait_for
from viewer.app import create_app
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command
from viewer.launch.refresh import Refresher
from viewer.settings import ViewerSettings


def _units(calls: dict[str, int]) -> int:
    return sum(COSTS.get(name, 0) * count for name, count in calls.items())


def _backdate(db: Path, seconds: int) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE ingest_runs SET started_at_unix = started_at_unix - ? WHERE run_id = (SELECT max(run_id) FROM"
            " ingest_runs)",
            (seconds,),
        )


def _last_state(db: Path) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return str(conn.execute("SELECT state FROM ingest_runs ORDER BY run_id DESC LIMIT 1").fetchone()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench refresh")
    parser.add_argument("--refreshes", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m bench --quick`")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-refresh-"))
    google = FakeGoogle(Mailbox.generate(5000, seed=7))
    with FakeGoogleServer(google) as server:
        (folder / "credentials.json").write_text(json.dumps(google.client_config()))
        (folder / "tokencache.json").write_text(json.dumps(google.authorized_user_info()))
        env = {
            "GMAIL_STATS_API_ENDPOINT": server.base_url,
            "GMAIL_STATS_CREDENTIALS": str(folder / "credentials.json"),
            "GMAIL_STATS_TOKENS": str(folder / "tokencache.json"),
            "GMAIL_STATS_DB": str(folder / "stats.db"),
            "OAUTHLIB_INSECURE_TRANSPORT": "1",
            "GMAIL_STATS_QUOTA_UNITS_PER_SEC": "1000000",
        }
        db = folder / "stats.db"
        for argv in (["scan"], ["account", "--refresh", "hourly"]):
            done = subprocess.run(
                [sys.executable, "-m", "ingester", *argv, "--quiet"], env=ingester_env(**env), check=False
            )
            assert done.returncode == 0
        settings = ViewerSettings(db=db, import_dir=folder / "imports", refresh_check_seconds=3600)
        launcher = ProcessLauncher(
            ingest_command=default_ingest_command(), db_path=db, import_dir=folder, environ=ingester_env(**env)
        )
        with TestClient(create_app(settings, launcher=launcher), base_url="http://127.0.0.1:7878") as client:
            app = client.app
            while not isinstance(getattr(getattr(app, "state", None), "refresher", None), Refresher):
                app = app.app  # type: ignore[attr-defined]
            refresher: Refresher = app.state.refresher  # type: ignore[attr-defined]
            before = dict(google.calls)
            seconds: list[float] = []
            for _ in range(args.refreshes):
                _backdate(db, 3601)
                started = time.monotonic()
                [run_id] = refresher.tick()
                assert run_id is not None
                wait_for(lambda: _last_state(db) == "done", timeout=120)
                seconds.append(time.monotonic() - started)
            spent = {k: v - before.get(k, 0) for k, v in google.calls.items() if v != before.get(k, 0)}
    per_refresh = _units(spent) / args.refreshes
    calls = {name: count // args.refreshes for name, count in spent.items()}
    print("| refresh of an unchanged 5,000-message mailbox | value |")
    print("|---|---|")
    print(f"| Gmail calls per refresh | {calls} |")
    print(f"| API units per refresh | **{per_refresh:g}** |")
    print(f"| units per day, hourly | **{per_refresh * 24:g}** |")
    print(f"| units per day, daily | **{per_refresh:g}** |")
    median = sorted(seconds)[len(seconds) // 2]
    print(f"| wall seconds per refresh (launch to `done`, median of {args.refreshes}) | {median:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
