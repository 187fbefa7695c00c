"""What the Docker tests bring up, and the helpers several of their modules share: `Stack`, a whole compose project
of its own (its own volume, folders and a free loopback port) driven through compose and the published port, and
`RunnerStack`, a stack's runners provisioned and launched through the viewer's own launcher code."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.exc import OperationalError

from shared.db import reader_engine
from shared.launch_request import LaunchCommand, LaunchRequest
from shared.runs import Run, run_by_launch_token
from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import compose_env, docker, remove_containers, throttle, wait_for, writable_dir
from tests.support.factories import GeneratedMessage, generate_messages, write_mbox
from tests.support.net import free_port
from viewer.launch.container_spec import STACK_LABEL, DockerStack, Runners
from viewer.launch.launch_docker import connect, provision_runners
from viewer.launch.launcher import Launched
from viewer.launch.runner_launcher import DockerLauncher


class Stack:
    """A stack of its own; `default_folders` runs compose from a project folder of its own with the `.env`
    defaults (`./imports`, `./secrets`), as a person who set nothing does."""

    def __init__(self, tmp_path: Path, *, default_folders: bool = False) -> None:
        self.name = f"gmstest-{uuid.uuid4().hex[:8]}"
        self.project_dir = tmp_path / "project" if default_folders else REPO_ROOT
        self.imports = (self.project_dir if default_folders else tmp_path) / "imports"
        self.imports.mkdir(parents=True)
        self.secrets = tmp_path / "secrets"  # not created: importing from the page must not need it
        self.port = free_port()
        folders = {} if default_folders else {"GMAIL_STATS_IMPORTS": str(self.imports)}
        # compose.yaml's relative folders resolve against the project folder (the scan stack sets COMPOSE_FILE).
        self.project_args = ["--file", str(REPO_ROOT / "compose.yaml"), "--project-directory", str(self.project_dir)]
        if not default_folders:
            self.project_args = []
        self.env = compose_env(
            COMPOSE_PROJECT_NAME=self.name,
            GMAIL_STATS_VOLUME=f"{self.name}-data",
            GMAIL_STATS_SECRETS=str(tmp_path / "secrets"),
            GMAIL_STATS_PUBLISHED_PORT=str(self.port),
            **folders,
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    def compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *self.project_args, *args],
            cwd=self.project_dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def up(self) -> None:
        result = self.compose("up", "--detach", "--wait", timeout=300)
        assert result.returncode == 0, result.stderr + self.compose("logs").stdout[-3000:]

    def get(self, path: str) -> dict[str, Any]:
        """A GET answered 200; `503 busy` (the ingester checkpointing, or SQLite's read-only recovery) is retried,
        as the page does."""
        deadline = time.monotonic() + 20
        while True:
            response = self.http.get(path)
            if response.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def status(self) -> dict[str, Any]:
        return self.get("/api/status")

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        token = self.status()["csrf_token"]
        return self.http.post(path, json=body, headers={"X-Gmail-Stats-Csrf": token})

    def run(self, run_id: int) -> dict[str, Any]:
        runs = self.get("/api/runs")["runs"]
        (run,) = [r for r in runs if r["run_id"] == run_id]
        return dict(run)

    def wait_run(self, run_id: int, *states: str, timeout: float = 120) -> dict[str, Any]:
        wait_for(lambda: self.run(run_id)["state"] in states, timeout=timeout, what=f"run {run_id} in {states}")
        return self.run(run_id)

    def ingesters(self, *, running: bool = False) -> list[str]:
        filters = ["--filter", f"label={STACK_LABEL}={self.name}"]
        if running:
            filters += ["--filter", "status=running"]
        return docker("ps", "--all", "--quiet", *filters).stdout.split()

    def viewer_exec(self, *argv: str, user: str = "0") -> subprocess.CompletedProcess[str]:
        return self.compose("exec", "-T", "--user", user, "viewer", *argv)

    def request_pending(self) -> bool:
        listing = self.viewer_exec("ls", "/requests", user="10001")
        return any(name.endswith(".json") for name in listing.stdout.split())

    def make_import(self, mbox: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "--no-print-directory", "import", f"MBOX={mbox}"],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )

    def down(self) -> None:
        self.http.close()
        remove_containers(f"{STACK_LABEL}={self.name}")
        self.compose("--profile", "ingester", "down", "--volumes", "--remove-orphans")
        docker("volume", "rm", "--force", f"{self.name}-data", check=False)


def running(made: Stack) -> Iterator[Stack]:
    """Up for the fixture's test, down after it, whatever happened."""
    try:
        made.up()
        yield made
    finally:
        made.down()


def big_mbox(stack: Stack, name: str = "big.mbox") -> tuple[Path, int]:
    """An mbox in the stack's import folder big enough to stay mid-run while a test acts; its path and count."""
    path = stack.imports / name
    expected = write_mbox(path, generate_messages(count=12000, body_bytes=1500, senders=300))
    return path, sum(expected.values())


def start_throttled_import(stack: Stack, path: str) -> int:
    """A page import of `path` whose runner container is held to 3 % of a CPU; its run id."""
    response = stack.post("/api/runs", {"source": "mbox", "path": path})
    assert response.status_code == 202, response.text
    run_id: int = response.json()["run_id"]
    (container,) = stack.ingesters(running=True)
    throttle(container, cpus="0.03")
    return run_id


class RunnerStack:
    """A stack's runners provisioned straight through the launcher's code, its data and requests in host folders (so
    run rows are read straight from the file); `close()` removes every container labelled with its name."""

    def __init__(self, tmp_path: Path, image: str) -> None:
        self.name = f"gmstest-{uuid.uuid4().hex[:8]}"
        self.imports = tmp_path / "imports"
        self.imports.mkdir()
        self.data = writable_dir(tmp_path / "data")
        self.requests = tmp_path / "requests"
        self.requests.mkdir()
        self.db = self.data / "stats.db"
        self.stack = DockerStack(
            name=self.name, image=image, data=str(self.data), imports=str(self.imports), requests=str(self.requests)
        )
        self.launchers: list[DockerLauncher] = []

    def provision(self, *, per_kind: int = 2, **environment: str) -> Runners:
        client = connect()
        try:
            return provision_runners(
                client, self.stack, environment=environment, requests_dir=str(self.requests), per_kind=per_kind
            )
        finally:
            client.close()

    def write(self, name: str, messages: list[GeneratedMessage]) -> dict[str, int]:
        """An mbox of `messages` in the import folder; its expected counts by sender."""
        return write_mbox(self.imports / name, messages)

    def launcher(self, runners: Runners) -> DockerLauncher:
        launcher = DockerLauncher(connect(), runners)
        self.launchers.append(launcher)
        return launcher

    def run(self, launched: Launched) -> Run | None:
        if os.geteuid() != 0:
            pytest.skip("reads the runner's database (uid 10001, mode 0600) from the host folder: needs root, as CI")
        if not self.db.exists():
            return None
        engine = reader_engine(self.db)
        try:
            with engine.connect() as conn:
                return run_by_launch_token(conn, launched.launch_token)
        except OperationalError:
            return None  # created but not migrated yet, or busy: look again
        finally:
            engine.dispose()

    def wait_state(self, launched: Launched, *states: str, timeout: float = 90) -> Run:
        wait_for(
            lambda: (run := self.run(launched)) is not None and run.state in states,
            timeout=timeout,
            what=f"run of {launched.launch_token} in {states}; last: {self.run(launched)}",
        )
        run = self.run(launched)
        assert run is not None
        return run

    def close(self) -> None:
        for launcher in self.launchers:
            launcher.close()
        remove_containers(f"{STACK_LABEL}={self.name}")


def import_request(*, import_path: str, resume_run_id: int | None = None) -> LaunchRequest:
    """A fresh import request (a new launch token) for a file in the import folder."""
    return LaunchRequest(
        LaunchCommand.IMPORT, launch_token=uuid.uuid4().hex, import_path=import_path, resume_run_id=resume_run_id
    )
