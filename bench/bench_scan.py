"""Gmail scan benchmarks against the fake Google running in its own process (never real Google).

1. At Gmail's quota: the fake enforces 250 units/s, the scan paces at its default 250; 5,000 messages.
2. The client's own ceiling: no quota on either side.
3. A re-scan of an unchanged 20,000-message mailbox: API calls and seconds.
4. Conversations at Gmail's quota (250 units/s both sides): all single-message threads, the issue-12 mix (55 %
   single, the rest averaging 3.5) and a mailing-list-heavy mix; messages/s and quota units per message.

Run: `.venv/bin/python -m bench scan` (add `--quick` for smaller mailboxes, `--write-readme` to put the conversation
table into bench/README.md). Exactness is checked each time.
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

from bench.readme import replace_between_markers
from ingester.gmail.auth import GoogleAccess
from ingester.gmail.scan import run_scan
from ingester.gmail.scan_types import ScanRequest, ScanTuning
from ingester.runs.outcome import RunResult
from ingester.runs.report import QuietReporter
from ingester.runs.session import ingest_session
from ingester.settings import IngesterSettings
from shared.timeutil import system_clock
from tests.fakes.google import COSTS
from tests.fakes.mailbox import MIXES

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


def start_fake(
    folder: Path, messages: int, quota: float | None, mix: str = "singles", *, extra: tuple[str, ...] = ()
) -> Fake:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    credentials, tokens = folder / "credentials.json", folder / "tokens.json"
    argv = [sys.executable, "-m", "tests.fakes.google_server", "--port", str(port), "--messages", str(messages)]
    argv += ["--write-credentials", str(credentials), "--write-tokens", str(tokens), "--mix", mix]
    if quota is not None:
        argv += ["--quota", str(quota)]
    argv += extra
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "fake Google on" not in line:
        raise RuntimeError(f"the fake did not start: {line!r}")
    return Fake(process, f"http://127.0.0.1:{port}/", credentials, tokens)


def scan(fake: Fake, db: Path, *, units: float, workers: int) -> tuple[RunResult, float]:
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
                calls = sum(after.get(k, 0) - before.get(k, 0) for k in COSTS)
                row |= {"rescan_calls": calls, "rescan_seconds": round(seconds, 2), "rescan_new": again.messages_new}
            return row
        finally:
            fake.stop()


def conversations(mix: str, *, messages: int) -> dict[str, object]:
    """One first scan at 250 units/s on both sides of a mailbox with conversation mix `mix`."""
    with tempfile.TemporaryDirectory() as folder:
        fake = start_fake(Path(folder), messages, 250, mix)
        try:
            db = Path(folder) / "stats.db"
            result, elapsed = scan(fake, db, units=250, workers=3)
            stats = fake.stats()
        finally:
            fake.stop()
        total, rows = counted(db)
        units = sum(COSTS[name] * stats.get(name, 0) for name in COSTS)
        return {
            "case": f"conversations: {mix}",
            "mean_thread": MIXES[mix].single_share + (1 - MIXES[mix].single_share) * MIXES[mix].mean_rest,
            "messages": result.messages_new,
            "seconds": round(elapsed, 2),
            "messages_per_s": round(result.messages_new / elapsed, 1),
            "units_per_message": round(units / max(1, result.messages_new), 2),
            "threads_get": stats.get("thread", 0),
            "messages_get": stats.get("get", 0),
            "exact": total == rows == result.messages_new == result.messages_seen,
            "retries": warnings(db),
        }


def conversation_table(rows: list[dict[str, object]], *, command: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"Measured {stamp} with `{command}` (fake and scan both at 250 units/s, 3 workers).",
        "",
        "| mailbox | mean messages per conversation | messages counted | seconds | messages/s | units/message"
        " | threads.get | messages.get | retries | exact |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {str(row['case']).removeprefix('conversations: ')} | {row['mean_thread']:.2f} | {row['messages']:,}"
            f" | {row['seconds']} | **{row['messages_per_s']}** | {row['units_per_message']} | {row['threads_get']:,}"
            f" | {row['messages_get']:,} | {row['retries']} | {'yes' if row['exact'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def peer_baseline(messages: int) -> dict[str, object]:
    """What a popular Python peer does: a new client and connection per message, `format=full`, no batching."""
    import google_auth_httplib2
    import httplib2
    from googleapiclient.discovery import build

    from ingester.gmail.auth import load_client_config, load_token_cache

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
    parser.add_argument("--only", choices=("quota", "ceiling", "rescan", "peer", "conversations"))
    parser.add_argument("--write-readme", action="store_true", help="write the conversation table to bench/README.md")
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
    if args.only in (None, "conversations"):
        rows = []
        for mix in ("singles", "typical", "lists"):
            rows.append(conversations(mix, messages=1500 if small else 5000))
            print(json.dumps(rows[-1]), flush=True)
        if args.write_readme:
            command = "python -m bench scan --only conversations" + (" --quick" if small else "")
            replace_between_markers(
                ROOT / "bench" / "README.md", "scan-threads", conversation_table(rows, command=command)
            )
        if not all(row["exact"] for row in rows):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
