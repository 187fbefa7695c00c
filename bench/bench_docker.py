"""`python -m bench docker`: image sizes, cold `docker compose up` to healthy, and the cost of one container per run.

Needs a Docker engine (`.ci/docker-setup.sh`); without one it says so and exits 0 so `make bench` goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.exc import OperationalError

from bench.readme import replace_between_markers
from shared.db import reader_engine
from shared.launch_request import LaunchCommand, LaunchRequest
from shared.runs import run_by_launch_token
from tests.support.factories import generate_messages, write_mbox
from tests.support.polling import wait_stopped
from viewer.launch.container_spec import STACK_LABEL, DockerStack
from viewer.launch.launch_docker import connect, provision_runners
from viewer.launch.runner_launcher import DockerLauncher

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# The benchmark's own tag, like the tests' `gmail-stats:test`: it never rebuilds or retags the image a user runs
# (`gmail-stats:local`). Parallel work on one engine can measure another (`GMAIL_STATS_BENCH_IMAGE`).
IMAGE = os.environ.get("GMAIL_STATS_BENCH_IMAGE", "gmail-stats:bench")
LOCAL_BASE = "gmail-stats/python-base:local"
INGESTER_UID = 10001


def docker(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def engine_ready() -> bool:
    return shutil.which("docker") is not None and docker("info", timeout=20).returncode == 0


def compose_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GMAIL_STATS_", "COMPOSE_"))}
    if "PYTHON_IMAGE" not in env and docker("image", "inspect", LOCAL_BASE).returncode == 0:
        env["PYTHON_IMAGE"] = LOCAL_BASE
    env["GMAIL_STATS_IMAGE"] = IMAGE
    env.update(extra)
    return env


def image_mb(image: str) -> float | None:
    result = docker("image", "inspect", "--format", "{{.Size}}", image)
    return int(result.stdout.strip()) / 1e6 if result.returncode == 0 else None


def build_seconds() -> float:
    started = time.monotonic()
    result = docker("compose", "--profile", "ingester", "build", env=compose_env())
    if result.returncode != 0:
        raise SystemExit(f"docker compose build failed:\n{result.stderr[-2000:]}")
    return time.monotonic() - started


def remove_runners(stack: str) -> None:
    ids = docker("ps", "--all", "--quiet", "--filter", f"label={STACK_LABEL}={stack}").stdout.split()
    if ids:
        docker("rm", "--force", *ids)


def cold_up_seconds() -> float | None:
    """`docker compose up --wait` on a fresh project and volume, image already built: until the viewer is healthy."""
    services = docker("compose", "config", "--services", env=compose_env()).stdout.split()
    if "viewer" not in services:
        return None
    name = f"gmbench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as folder:
        env = compose_env(
            COMPOSE_PROJECT_NAME=name,
            GMAIL_STATS_VOLUME=f"{name}-data",
            GMAIL_STATS_IMPORTS=str(Path(folder) / "imports"),
            GMAIL_STATS_SECRETS=str(Path(folder) / "secrets"),
            GMAIL_STATS_PUBLISHED_PORT="17878",
        )
        try:
            started = time.monotonic()
            result = docker("compose", "up", "--detach", "--wait", env=env, timeout=300)
            elapsed = time.monotonic() - started
            if result.returncode != 0:
                raise SystemExit(f"docker compose up failed:\n{result.stderr[-2000:]}")
            return elapsed
        finally:
            remove_runners(name)  # not compose's: they would keep the volumes in use
            docker("compose", "down", "--volumes", "--remove-orphans", env=env)


def run_state(db: Path, token: str) -> str | None:
    if not db.exists():
        return None
    engine = reader_engine(db)
    try:
        with engine.connect() as conn:
            run = run_by_launch_token(conn, token)
    except OperationalError:
        return None  # created but not migrated yet
    finally:
        engine.dispose()
    return run.state if run is not None else None


def launch_overhead(runs: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds per tiny import: through `DockerLauncher` (launch call: write the request, start the stack's import
    runner; launch to exit) and as a local process."""
    launch_calls: list[float] = []
    in_container: list[float] = []
    as_process: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "imports").mkdir()
        write_mbox(root / "imports" / "tiny.mbox", generate_messages(count=20, body_bytes=200))
        data = root / "data"
        data.mkdir()
        os.chown(data, INGESTER_UID, INGESTER_UID)
        (root / "requests").mkdir()
        stack = DockerStack(
            name=f"gmbench-{uuid.uuid4().hex[:8]}",
            image=IMAGE,
            data=str(data),
            imports=str(root / "imports"),
            requests=str(root / "requests"),
        )
        client = connect()
        runners = provision_runners(client, stack, environment={}, requests_dir=str(root / "requests"))
        launcher = DockerLauncher(client, runners)
        try:
            for _ in range(runs):
                token = uuid.uuid4().hex
                started = time.monotonic()
                launched = launcher.launch(
                    LaunchRequest(LaunchCommand.IMPORT, launch_token=token, import_path="tiny.mbox")
                )
                launch_calls.append(time.monotonic() - started)
                wait_stopped(launcher, launched, timeout=120)
                if run_state(data / "stats.db", token) != "done":
                    raise SystemExit(f"container run did not finish: {launcher.log_tail(launched)}")
                in_container.append(time.monotonic() - started)
                launcher.reap()
            for _ in range(runs):
                started = time.monotonic()
                subprocess.run(
                    [sys.executable, "-m", "ingester", "import", str(root / "imports" / "tiny.mbox"), "--quiet"],
                    check=True,
                    cwd=REPO_ROOT,
                    env={**os.environ, "GMAIL_STATS_DB": str(root / "local.db")},
                    stdin=subprocess.DEVNULL,
                )
                as_process.append(time.monotonic() - started)
        finally:
            launcher.close()
            remove_runners(stack.name)
    return launch_calls, in_container, as_process


def render(args: argparse.Namespace) -> str:
    build = build_seconds()
    sizes = {IMAGE: image_mb(IMAGE), LOCAL_BASE: image_mb(LOCAL_BASE)}
    up = cold_up_seconds()
    calls, container, process = launch_overhead(args.runs)
    median = statistics.median
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    engine = json.loads(docker("version", "--format", "{{json .Server}}").stdout or "{}").get("Version", "?")
    lines = [
        f"Measured {now} with `python -m bench docker --write-readme` (Docker engine {engine}; MB = 10⁶ bytes).",
        "",
        "| measure | value |",
        "|---|---:|",
    ]
    for image, size in sizes.items():
        lines.append(f"| image size `{image}` | {f'{size:.0f} MB' if size is not None else 'absent'} |")
    lines.append(f"| `docker compose build`, warm layer cache | {build:.1f} s |")
    up_text = f"{up:.1f} s" if up is not None else "no viewer service yet"
    lines.append(f"| cold `docker compose up --wait` to healthy (image built, new volume) | {up_text} |")
    lines.append(f"| `DockerLauncher.launch` call (request + start), median of {args.runs} | {median(calls):.2f} s |")
    lines.append(
        f"| tiny import (20 messages) in a launched container, launch to exit, median | {median(container):.2f} s |"
    )
    lines.append(f"| the same import as a local process, median | {median(process):.2f} s |")
    lines.append(f"| **container overhead per run** | **{median(container) - median(process):.2f} s** |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench docker",
        description="Image sizes, cold compose up to healthy, and launch overhead of one ingester container per run.",
        epilog="Example:\n  python -m bench docker --write-readme",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5, help="launches to take the median of (default 5)")
    parser.add_argument("--quick", action="store_true", help="2 runs only")
    parser.add_argument("--large", action="store_true", help="accepted for `python -m bench` (no effect here)")
    parser.add_argument("--write-readme", action="store_true", help="replace the table in bench/README.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 2
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not engine_ready():
        print("bench docker: no Docker engine reachable (run .ci/docker-setup.sh); skipped")
        return 0
    text = render(args)
    print(text)
    if args.write_readme:
        replace_between_markers(BENCH_DIR / "README.md", "docker", text)
    return 0
