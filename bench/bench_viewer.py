"""Viewer latency under 20 concurrent pollers, and viewer RSS, on a generated 200k-sender / 2M-message database.

Run: `.venv/bin/python -m bench.bench_viewer [--seconds 15] [--pollers 20]`. The database is generated once with
bulk SQL through the real migrations and cached at `bench/out/viewer-200k.db` (git-ignored) by viewer_db.py; the
single-request mixes are viewer_requests.py's. This module starts the viewer, runs the pollers and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from bench.viewer_db import DB, OUT, generate
from bench.viewer_requests import request_mixes, single
from shared.db import close_writer_keeping_sidecars, writer_engine

PARTS = ["pollers", "sorts", "searches", "presets", "find", "domains", "hidden", "volume", "export"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: steadier than latency on a shared machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _poller(client: httpx.AsyncClient, until: float, pause: float, results: dict[str, list[float]]) -> None:
    # Browser tabs are not synchronised: each poller starts at a random point of its cycle.
    await asyncio.sleep(random.uniform(0, pause))
    while time.monotonic() < until:
        for name, url in (("status", "/api/status"), ("page", "/api/senders?limit=50")):
            t0 = time.perf_counter()
            response = await client.get(url)
            results[name].append(time.perf_counter() - t0)
            assert response.status_code == 200, response.text
        await asyncio.sleep(pause)


async def _load(base: str, *, pollers: int, seconds: float, pause: float) -> dict[str, list[float]]:
    """The pollers, with this process's garbage collector paused (see `viewer_requests.single`): one event loop
    times all 20."""
    results: dict[str, list[float]] = {"status": [], "page": []}
    limits = httpx.Limits(max_connections=pollers)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        until = time.monotonic() + seconds
        gc.collect()
        gc.disable()
        try:
            await asyncio.gather(*(_poller(client, until, pause, results) for _ in range(pollers)))
        finally:
            gc.enable()
    return results


def _heartbeat(stop: threading.Event) -> None:
    """What a running ingester does to the file: a small commit twice a second (the cache then misses often)."""
    engine = writer_engine(DB)
    try:
        while not stop.wait(0.5):
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE ingest_runs SET updated_at_unix = updated_at_unix + 1")
    finally:
        close_writer_keeping_sidecars(engine, DB)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--pollers", type=int, default=20)
    parser.add_argument("--pause", type=float, default=1.0, help="pause between a poller's cycles (the page: 1 s)")
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, default=PARTS, help="measure only these parts (the machine is shared)"
    )
    args = parser.parse_args(argv)
    parts = set(args.only)
    if args.regenerate or not DB.exists():
        generate(DB)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GMAIL_STATS_")}
    env["GMAIL_STATS_IMPORT_DIR"] = str(OUT)
    server = subprocess.Popen(
        [sys.executable, "-m", "viewer", "--db", str(DB), "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/api/status", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        idle_rss, _ = _rss_kib(server.pid)
        single(base, "/api/senders?limit=50", repeat=5)  # warm the page cache
        idle: dict[str, list[float]] = {"status": [], "page": []}
        busy = idle
        cpu: dict[str, float] = {}
        if "pollers" in parts:
            before = _cpu_seconds(server.pid)
            idle = asyncio.run(_load(base, pollers=args.pollers, seconds=args.seconds, pause=args.pause))
            cpu["idle"] = (_cpu_seconds(server.pid) - before) / max(1, len(idle["status"]) + len(idle["page"]))
            stop = threading.Event()
            writer = threading.Thread(target=_heartbeat, args=(stop,), daemon=True)
            writer.start()
            before = _cpu_seconds(server.pid)
            try:
                busy = asyncio.run(_load(base, pollers=args.pollers, seconds=args.seconds, pause=args.pause))
            finally:
                stop.set()
                writer.join()
            cpu["busy"] = (_cpu_seconds(server.pid) - before) / max(1, len(busy["status"]) + len(busy["page"]))
        extra = request_mixes(base, parts)
        rss, peak = _rss_kib(server.pid)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    print(
        f"\n{args.pollers} pollers, each polling status + a 50-row page every {args.pause} s for {args.seconds:.0f} s\n"
    )
    print("| request (single, uncached unless said) | n | p50 ms | p95 ms | max ms |")
    print("| --- | --- | --- | --- | --- |")
    rows = {
        "`/api/senders` page, 20 pollers, idle database": idle["page"],
        "`/api/status`, 20 pollers, idle database": idle["status"],
        "`/api/senders` page, 20 pollers, commits every 0.5 s": busy["page"],
        "`/api/status`, 20 pollers, commits every 0.5 s": busy["status"],
        **extra,
    }
    for name, samples in rows.items():
        if not samples:
            continue
        print(
            f"| {name} | {len(samples)} | {_pct(samples, 0.5):.1f} | {_pct(samples, 0.95):.1f} | "
            f"{max(samples) * 1000:.1f} |"
        )
    for phase, seconds in cpu.items():
        print(f"\nviewer CPU per polled request ({phase} database): {seconds * 1000:.2f} ms")
    print(f"\nviewer RSS: {idle_rss / 1024:.0f} MB idle, {rss / 1024:.0f} MB at the end, peak {peak / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
