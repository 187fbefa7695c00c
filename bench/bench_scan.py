"""Gmail scan benchmarks against the fake Google running in its own process (never real Google).

1. At Gmail's quota: the fake enforces 250 units/s, the scan paces at its default 250; 5,000 messages.
2. The client's own ceiling: no quota on either side.
3. A re-scan of an unchanged 20,000-message mailbox: API calls and seconds.

Run: `.venv/bin/python -m bench scan` (add `--quick` for smaller mailboxes). Exactness is checked each time.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ingester.auth import GoogleAccess
from ingester.report import QuietReporter
from ingester.scan import run_scan
from ingester.scan_types import ScanRequest, ScanResult, ScanTuning
from ingester.session import ingest_session
from ingester.settings import IngesterSettings
from shared.timeutil import system_clock

ROOT = Path(__file__).resolve().parent.parent

# The settings own every default; model_construct takes them without reading the environment.
DEFAULTS = IngesterSettings.model_construct()


@dataclass(frozen=True, slots=True)
class Fake:
    process: subprocess.Popen[str]
    base_url: str
    credentials: Path
    tokens: Path

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.base_url + "_fake/stats", timeout=10) as answer:
            data: dict[str, int] = json.loads(answer.read())
        return data

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)


def start_fake(folder: Path, messages: int, quota: float | None) -> Fake:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    credentials, tokens = folder / "credentials.json", folder / "tokens.json"
    argv = [sys.executable, "-m", "tests.fakes.google", "--port", str(port), "--messages", str(messages)]
    argv += ["--write-credentials", str(credentials), "--write-tokens", str(tokens)]
    if quota is not None:
        argv += ["--quota", str(quota)]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "fake Google on" not in line:
        raise RuntimeError(f"the fake did not start: {line!r}")
    return Fake(process, f"http://127.0.0.1:{port}/", credentials, tokens)


def scan(fake: Fake, db: Path, *, units: float, workers: int) -> tuple[ScanResult, float]:
    access = GoogleAccess(
        credentials_path=fake.credentials,
        tokens_path=fake.tokens,
        oauth_bind="127.0.0.1",
        oauth_port=0,
        auth_timeout=5,
        api_endpoint=fake.base_url,
        http_timeout=DEFAULTS.http_timeout,
        note=lambda text: None,
    )
    with ingest_session(db, clock=system_clock) as engine:
        started = time.perf_counter()
        result = run_scan(
            engine=engine,
            request=ScanRequest(),
            access=access,
            tuning=replace(ScanTuning.from_settings(DEFAULTS), units_per_second=units, workers=workers),
            reporter=QuietReporter(),
            cancel=threading.Event(),
            clock=system_clock,
            on_consent_url=lambda url: None,
        )
        elapsed = time.perf_counter() - started
    return result, elapsed


def counted(db: Path) -> tuple[int, int]:
    conn = sqlite3.connect(db)
    try:
        total = conn.execute("SELECT coalesce(sum(mails_sent), 0) FROM senders").fetchone()[0]
        rows = conn.execute("SELECT count(DISTINCT mail_id) FROM seen_mails WHERE counted = 1").fetchone()[0]
    finally:
        conn.close()
    return int(total), int(rows)


def warnings(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT warnings_count FROM ingest_runs ORDER BY run_id LIMIT 1").fetchone()[0])
    finally:
        conn.close()


def case(
    name: str, *, messages: int, quota: float | None, units: float, workers: int, rescan: bool = False
) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        fake = start_fake(Path(folder), messages, quota)
        try:
            db = Path(folder) / "stats.db"
            result, elapsed = scan(fake, db, units=units, workers=workers)
            total, rows = counted(db)
            exact = total == rows == result.messages_new == result.messages_seen
            row: dict[str, object] = {
                "case": name,
                "messages": result.messages_new,
                "seconds": round(elapsed, 2),
                "messages_per_s": round(result.messages_new / elapsed, 1),
                "exact": exact,
                "outcome": str(result.outcome),
                "retries": warnings(db),
            }
            if rescan:
                before = fake.stats()
                again, seconds = scan(fake, db, units=units, workers=workers)
                after = fake.stats()
                calls = sum(after.get(k, 0) - before.get(k, 0) for k in ("profile", "list", "get", "history"))
                row |= {"rescan_calls": calls, "rescan_seconds": round(seconds, 2), "rescan_new": again.messages_new}
            return row
        finally:
            fake.stop()


def peer_baseline(messages: int) -> dict[str, object]:
    """What a popular Python peer does: a new client and connection per message, `format=full`, no batching."""
    import google_auth_httplib2
    import httplib2
    from googleapiclient.discovery import build

    from ingester.auth import load_client_config, load_token_cache

    with tempfile.TemporaryDirectory() as folder:
        fake = start_fake(Path(folder), messages, None)
        try:
            creds = load_token_cache(fake.tokens, load_client_config(fake.credentials))
            service = build("gmail", "v1", credentials=creds, client_options={"api_endpoint": fake.base_url})
            page = service.users().messages().list(userId="me", maxResults=500).execute()
            ids = [m["id"] for m in page["messages"]][:messages]
            service.close()
            started = time.perf_counter()
            for gmail_id in ids:
                http = google_auth_httplib2.AuthorizedHttp(creds, http=httplib2.Http())
                client = build("gmail", "v1", http=http, client_options={"api_endpoint": fake.base_url})
                client.users().messages().get(userId="me", id=gmail_id, format="full").execute()
                client.close()
            elapsed = time.perf_counter() - started
        finally:
            fake.stop()
    return {
        "case": "peer: client per message, format=full",
        "messages": len(ids),
        "seconds": round(elapsed, 2),
        "messages_per_s": round(len(ids) / elapsed, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller mailboxes")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--only", choices=("quota", "ceiling", "rescan", "peer"))
    args = parser.parse_args(argv)
    small = args.quick
    cases: dict[str, Callable[[], dict[str, object]]] = {
        "quota": lambda: case(
            "250 units/s quota", messages=1000 if small else 5000, quota=250, units=250, workers=args.workers
        ),
        "ceiling": lambda: case(
            "no quota (client ceiling)", messages=5000 if small else 20000, quota=None, units=1e9, workers=args.workers
        ),
        "rescan": lambda: case(
            "unchanged re-scan",
            messages=5000 if small else 20000,
            quota=None,
            units=1e9,
            workers=args.workers,
            rescan=True,
        ),
    }
    cases["peer"] = lambda: peer_baseline(300)
    print(f"# bench_scan on {os.cpu_count()} CPUs, workers={args.workers}", flush=True)
    for key, run in cases.items():
        if args.only in (None, key):
            print(json.dumps(run()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
