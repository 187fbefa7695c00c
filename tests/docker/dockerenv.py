"""The Docker engine for tests marked `docker`: required under CI=true, skipped with one line elsewhere.

Tests drive the engine through the `docker` CLI (only `viewer/launch/launch_docker.py` imports the SDK) and build the
stack's image once per session, from the debootstrapped base when `.ci/docker-setup.sh` made one.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.support.polling import wait_for as wait_for  # the one polling helper, importable from here too

# The tests' own tag, so a test run never rebuilds or retags the image a user runs (`gmail-stats:local`);
# parallel work on one engine can pick another (the stacks then run that image too).
IMAGE = os.environ.get("GMAIL_STATS_TEST_IMAGE", "gmail-stats:test")
LOCAL_BASE = "gmail-stats/python-base:local"
INGESTER_UID = 10001
GET_AN_ENGINE = (
    "install Docker Engine (Linux) or Docker Desktop (macOS), start it, and make sure your user may use it "
    "(`docker info` answers) to run the Docker tests"
)


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def engine_problem() -> str | None:
    """Why no engine is usable, or None when `docker info` answers."""
    if shutil.which("docker") is None:
        return f"no docker CLI on PATH; {GET_AN_ENGINE}"
    try:
        result = docker("info", "--format", "{{.ServerVersion}}", check=False, timeout=20)
    except subprocess.TimeoutExpired:
        return "docker info timed out"
    if result.returncode != 0:
        return f"no Docker engine answers `docker info`; {GET_AN_ENGINE}"
    return None


def require_engine() -> None:
    problem = engine_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {problem}", pytrace=False)
    pytest.skip(problem)


def python_image() -> str:
    if "PYTHON_IMAGE" in os.environ:
        return os.environ["PYTHON_IMAGE"]
    has_local = docker("image", "inspect", LOCAL_BASE, check=False).returncode == 0
    return LOCAL_BASE if has_local else "python:3.12-slim"


def compose_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GMAIL_STATS_", "COMPOSE_"))}
    env["PYTHON_IMAGE"] = python_image()
    env["GMAIL_STATS_IMAGE"] = IMAGE
    env.update(extra)
    return env


def build_image() -> None:
    """`docker compose build` (incremental: layers are cached between sessions)."""
    result = subprocess.run(
        ["docker", "compose", "--profile", "ingester", "build"],
        cwd=REPO_ROOT,
        env=compose_env(),
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def containers_with_label(label: str) -> list[str]:
    listing = docker("ps", "--all", "--quiet", "--filter", f"label={label}")
    return listing.stdout.split()


def remove_containers(label: str) -> None:
    ids = containers_with_label(label)
    if ids:
        docker("rm", "--force", *ids, check=False)


def container_state(container_id: str) -> dict[str, object]:
    result = docker("inspect", container_id, check=False)
    if result.returncode != 0:
        return {}
    state: dict[str, object] = json.loads(result.stdout)[0]["State"]
    return state


def throttle(container_id: str, cpus: str = "0.1") -> None:
    """Slows a launched ingester down (a cgroup CPU quota) so a test can see it mid-run on a small file.

    Only ever until a state is reached: a quota also starves the ingester's SIGTERM handling (at 0.03 CPUs it missed
    the 10 s grace on a fresh machine, issue #27), so a runner a test signals is first `paused`, which lifts it."""
    docker("update", "--cpus", cpus, container_id, check=False)


def full_speed(container_id: str) -> None:
    """Lifts a test's CPU quota to every core of the engine (`--cpus 0` leaves the old quota in place)."""
    docker("update", "--cpus", _engine_cpus(), container_id, check=False)


@functools.cache
def _engine_cpus() -> str:
    return docker("info", "--format", "{{.NCPU}}").stdout.strip()


@contextmanager
def paused(container_id: str) -> Iterator[None]:
    """Stops a runner's ingester (SIGSTOP to the container's PID 1, the ingester) while a test acts on it mid-run,
    lifts any CPU quota, and continues it (SIGCONT) on exit.

    A stopped ingester keeps holding the ingest lock and its run stays `running` however long the test takes, and
    a signal sent meanwhile (the viewer's SIGTERM) waits and is then handled at full speed: unlike a quota this
    starves nothing and races with nothing. (The cgroup freezer, `docker pause`, fails on a throttled container:
    its tasks do not get the CPU time to reach the freeze.) SIGSTOP is delivered whatever the quota: it is pending
    the moment it is sent, and the task stops before it runs any more of its own code."""
    docker("kill", "--signal", "SIGSTOP", container_id)
    full_speed(container_id)
    try:
        yield
    finally:
        docker("kill", "--signal", "SIGCONT", container_id, check=False)


def chown_to_ingester(path: Path) -> None:
    """Gives a host folder to the image's user (uid 10001): directly as root, else through a throwaway root
    container of the test image (a docker-group contributor may use the engine but not chown)."""
    if os.geteuid() == 0:
        os.chown(path, INGESTER_UID, INGESTER_UID)
        return
    docker(
        "run", "--rm", "--user", "0:0", "--network", "none", "--entrypoint", "chown",
        "--volume", f"{path.absolute()}:/target", ensure_image(), f"{INGESTER_UID}:{INGESTER_UID}", "/target",
    )  # fmt: skip


def writable_dir(path: Path) -> Path:
    """A host folder the image's non-root user can write (the data folder of a bind-mounted test stack)."""
    path.mkdir(parents=True, exist_ok=True)
    chown_to_ingester(path)
    return path


@functools.cache
def _built() -> str:
    build_image()
    return IMAGE


def ensure_image() -> str:
    """Requires the engine, then builds the image once per test session."""
    require_engine()
    return _built()


def wait_until_host_port_free(port: int, *, why: str) -> None:
    """Waits until the engine can publish 127.0.0.1:`port`, or fails naming the containers that publish it.

    A previous case's container may have published the port; the engine frees it a moment after removing that
    container (docker-proxy exits, then the engine's own record of the port goes), and a container started in
    between fails with "port is already allocated". So the wait ends when nothing listens there and a probe
    container publishes the port (`docker run --rm` returns once the probe's record is gone again)."""
    image = ensure_image()

    def free() -> bool:
        with socket.socket() as listener:
            if listener.connect_ex(("127.0.0.1", port)) == 0:
                return False
        probe = docker(
            "run", "--rm", "--publish", f"127.0.0.1:{port}:{port}", "--entrypoint", "true", image, check=False
        )
        if probe.returncode == 0:
            return True
        if "already allocated" in probe.stderr or "address already in use" in probe.stderr:
            return False
        raise AssertionError(f"a probe container could not publish port {port}: {probe.stderr.strip()}")

    try:
        wait_for(free, timeout=60, interval=0.5, what=f"127.0.0.1:{port} free")
    except AssertionError:
        holders = docker("ps", "--all", "--filter", f"publish={port}", "--format", "{{.Names}}", check=False)
        pytest.fail(f"127.0.0.1:{port} is taken (containers: {holders.stdout.split() or 'none'}); {why}")


def launch_once_port_is_free(post: Callable[[], httpx.Response]) -> httpx.Response:
    """The answer to `post` (a launch from the page), asked again while the engine says the callback port is still
    allocated: it frees the port a moment after the container that published it is gone (a state, not a sleep).
    The viewer itself asks again for 10 s (`runner_launcher._PortHeld`); this covers an engine slower than that."""

    def started() -> httpx.Response | None:
        answer = post()
        return None if answer.status_code == 500 and "already allocated" in answer.text else answer

    return wait_for(started, timeout=60, interval=1, what="the engine to free the callback port")
