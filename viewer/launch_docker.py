"""The `docker` launcher: each run is a new, hardened, one-shot ingester container (the only Docker SDK user).

It never takes an image, mount, argv or environment from a request: `container_spec` builds everything from the
stack's fixed description and a `LaunchRequest`, and a unit test pins that spec.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

import docker
import requests
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Mount

from viewer.launcher import (
    CANCEL_GRACE_SECONDS,
    LOG_TAIL_LINES,
    LaunchCommand,
    Launched,
    LaunchError,
    LaunchRequest,
)

# Where things live inside an ingester container (the compose `ingester` service uses the same paths).
DATA_DIR = "/data"
IMPORTS_DIR = "/imports"
SECRETS_DIR = "/secrets"
OAUTH_CONTAINER_PORT = 8765

ROLE_LABEL = "gmail-stats.role"
STACK_LABEL = "gmail-stats.stack"
TOKEN_LABEL = "gmail-stats.launch-token"
COMMAND_LABEL = "gmail-stats.command"
RESUME_LABEL = "gmail-stats.resume-run-id"
INGESTER_ROLE = "ingester"

# Tuning variables a viewer passes on from its own environment; anything else (paths, the token, the OAuth
# listener) is fixed here, so a viewer's environment can never point an ingester elsewhere.
ENV_ALLOWLIST = frozenset(
    {
        "GMAIL_STATS_PARSE_WORKERS",
        "GMAIL_STATS_AUTH_TIMEOUT",
        "GMAIL_STATS_QUOTA_UNITS_PER_SEC",
        "GMAIL_STATS_API_ENDPOINT",
        "GMAIL_STATS_SCAN_WORKERS",
        "GMAIL_STATS_RETRY_ATTEMPTS",
        "GMAIL_STATS_RETRY_BASE_SECONDS",
        "GMAIL_STATS_HTTP_TIMEOUT",
    }
)
_FINISHED_STATES = ("exited", "dead")
_ALIVE_STATES = frozenset({"created", "running", "restarting", "paused"})
_API_ERRORS = (DockerException, requests.exceptions.RequestException)


@dataclass(frozen=True, slots=True)
class DockerStack:
    """What every launched ingester shares: the image, the data volume and the host folders of one stack.

    `data` is a named volume, or an absolute host path (tests); `imports` and `secrets` are absolute host paths,
    as the engine resolves bind mounts on the host, not in the viewer's container.
    """

    name: str
    image: str
    data: str
    imports: str | None = None
    secrets: str | None = None
    network: str | None = None
    oauth_host_ip: str = "127.0.0.1"
    oauth_host_port: int = OAUTH_CONTAINER_PORT


@dataclass(frozen=True, slots=True)
class MountSpec:
    target: str
    source: str
    type: Literal["volume", "bind"]
    read_only: bool


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """Everything `containers.create` is given; nothing else is ever set."""

    image: str
    command: tuple[str, ...]
    name: str
    environment: Mapping[str, str]
    labels: Mapping[str, str]
    mounts: tuple[MountSpec, ...]
    ports: Mapping[str, tuple[str, int]]
    network: str | None
    cap_drop: tuple[str, ...] = ("ALL",)
    security_opt: tuple[str, ...] = ("no-new-privileges:true",)
    read_only: bool = True
    tmpfs: Mapping[str, str] = field(default_factory=lambda: {"/tmp": "rw,nosuid,nodev,size=64m"})
    privileged: bool = False


def _import_argument(import_path: str | None) -> str:
    """The request's path inside the import folder, refused when it could leave it."""
    if not import_path:
        raise LaunchError("an import needs a file", hint="choose a file from the import folder")
    relative = PurePosixPath(import_path)
    if relative.is_absolute() or ".." in relative.parts or "\x00" in import_path:
        raise LaunchError(f"{import_path!r} is not inside the import folder", hint="choose a file it lists")
    return str(PurePosixPath(IMPORTS_DIR) / relative)


def container_spec(stack: DockerStack, request: LaunchRequest, *, environment: Mapping[str, str]) -> ContainerSpec:
    """The one container a request may start: fixed argv, the stack's mounts, allow-listed env, labels."""
    is_import = request.command is LaunchCommand.IMPORT
    argv = ["import", _import_argument(request.import_path)] if is_import else ["scan"]
    if request.resume_run_id is not None:
        argv += ["--resume", str(int(request.resume_run_id))]
    argv.append("--quiet")
    env = {k: v for k, v in sorted(environment.items()) if k in ENV_ALLOWLIST}
    env.update(
        {
            "GMAIL_STATS_DB": f"{DATA_DIR}/stats.db",
            "GMAIL_STATS_CREDENTIALS": f"{SECRETS_DIR}/credentials.json",
            "GMAIL_STATS_TOKENS": f"{SECRETS_DIR}/tokencache.json",
            "GMAIL_STATS_OAUTH_BIND": "0.0.0.0",
            "GMAIL_STATS_LAUNCH_TOKEN": request.launch_token,
            "PYTHONUNBUFFERED": "1",
        }
    )
    labels = {
        ROLE_LABEL: INGESTER_ROLE,
        STACK_LABEL: stack.name,
        TOKEN_LABEL: request.launch_token,
        COMMAND_LABEL: str(request.command),
    }
    if request.resume_run_id is not None:
        labels[RESUME_LABEL] = str(request.resume_run_id)
    data_type: Literal["volume", "bind"] = "bind" if stack.data.startswith("/") else "volume"
    mounts = [MountSpec(DATA_DIR, stack.data, data_type, read_only=False)]
    if stack.imports is not None:
        mounts.append(MountSpec(IMPORTS_DIR, stack.imports, "bind", read_only=True))
    if stack.secrets is not None:
        mounts.append(MountSpec(SECRETS_DIR, stack.secrets, "bind", read_only=False))
    # The consent redirect reaches a scan through the host's loopback only; imports publish nothing.
    ports = (
        {f"{OAUTH_CONTAINER_PORT}/tcp": (stack.oauth_host_ip, stack.oauth_host_port)}
        if request.command is LaunchCommand.SCAN
        else {}
    )
    return ContainerSpec(
        image=stack.image,
        command=tuple(argv),
        name=f"{stack.name}-ingester-{request.launch_token[:12]}",
        environment=env,
        labels=labels,
        mounts=tuple(mounts),
        ports=ports,
        network=stack.network,
    )


def create_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """The `containers.create` keyword arguments for a spec (no stdin, no TTY, never the host's namespaces)."""
    return {
        "image": spec.image,
        "command": list(spec.command),
        "name": spec.name,
        "environment": dict(spec.environment),
        "labels": dict(spec.labels),
        "mounts": [Mount(m.target, m.source, type=m.type, read_only=m.read_only) for m in spec.mounts],
        "ports": dict(spec.ports),
        "network": spec.network,
        "cap_drop": list(spec.cap_drop),
        "security_opt": list(spec.security_opt),
        "read_only": spec.read_only,
        "tmpfs": dict(spec.tmpfs),
        "privileged": spec.privileged,
        "stdin_open": False,
        "tty": False,
        "detach": True,
    }


def connect(*, timeout: int = 30) -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (default: the local socket), at the engine's API version."""
    try:
        return docker.from_env(version="auto", timeout=timeout)
    except _API_ERRORS as exc:
        raise LaunchError(
            f"cannot reach the Docker engine: {exc}",
            hint="the viewer needs /var/run/docker.sock mounted (see compose.yaml)",
        ) from exc


class DockerLauncher:
    """Launches, watches, cancels and removes the ingester containers of one stack."""

    def __init__(
        self,
        client: docker.DockerClient,
        stack: DockerStack,
        *,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self._client = client
        self._stack = stack
        self._environment = dict(environment or {})
        self._lock = threading.Lock()
        self._finished_logs: dict[str, list[str]] = {}
        self._timers: list[threading.Timer] = []

    @property
    def stack(self) -> DockerStack:
        return self._stack

    def close(self) -> None:
        """Stops pending SIGKILL timers and closes the client (containers keep running; a new viewer adopts them)."""
        with self._lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
            timer.join()
        self._client.close()

    def launch(self, request: LaunchRequest) -> Launched:
        spec = container_spec(self._stack, request, environment=self._environment)
        try:
            container = self._client.containers.create(**create_kwargs(spec))
        except ImageNotFound as exc:
            raise LaunchError(
                f"the ingester image {spec.image} is missing", hint="build it: docker compose build"
            ) from exc
        except _API_ERRORS as exc:
            raise LaunchError(f"cannot create the ingester container: {exc}", hint=_engine_hint(exc)) from exc
        try:
            container.start()
        except _API_ERRORS as exc:
            with _ignoring_api_errors():
                container.remove(force=True)
            raise LaunchError(f"cannot start the ingester container: {exc}", hint=_engine_hint(exc)) from exc
        return Launched(handle=str(container.id), launch_token=request.launch_token)

    def _container(self, launched: Launched) -> Container | None:
        try:
            return self._client.containers.get(launched.handle)
        except NotFound:
            return None

    def is_alive(self, launched: Launched) -> bool:
        container = self._container(launched)
        return container is not None and container.status in _ALIVE_STATES

    def cancel(self, launched: Launched, *, grace_seconds: float = CANCEL_GRACE_SECONDS) -> None:
        container = self._container(launched)
        if container is None or container.status not in _ALIVE_STATES:
            return
        with _ignoring_api_errors():
            container.kill(signal="SIGTERM")
        timer = threading.Timer(grace_seconds, self._kill_if_alive, args=(launched,))
        timer.daemon = True
        with self._lock:
            self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def _kill_if_alive(self, launched: Launched) -> None:
        with _ignoring_api_errors():
            if self.is_alive(launched):
                container = self._container(launched)
                if container is not None:
                    container.kill(signal="SIGKILL")

    def log_tail(self, launched: Launched, *, lines: int = LOG_TAIL_LINES) -> list[str]:
        container = self._container(launched)
        if container is None:
            with self._lock:
                return self._finished_logs.get(launched.handle, [])[-lines:]
        return _tail(container, lines)

    def adopt(self) -> list[Launched]:
        running = self._client.containers.list(filters={"label": self._label_filters(), "status": "running"})
        return [Launched(handle=str(c.id), launch_token=c.labels.get(TOKEN_LABEL, "")) for c in running]

    def reap(self) -> None:
        """Removes this stack's finished ingester containers, keeping their last log lines for `log_tail`."""
        for status in _FINISHED_STATES:
            finished = self._client.containers.list(
                all=True, filters={"label": self._label_filters(), "status": status}
            )
            for container in finished:
                tail = _tail(container, LOG_TAIL_LINES)
                with _ignoring_api_errors():
                    container.remove()
                with self._lock:
                    self._finished_logs[str(container.id)] = tail

    def _label_filters(self) -> list[str]:
        return [f"{ROLE_LABEL}={INGESTER_ROLE}", f"{STACK_LABEL}={self._stack.name}"]

    def wait_for_exit(self, launched: Launched, *, timeout: float) -> bool:
        """Polls until the container has stopped (for tests and benchmarks); True if it did within `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.is_alive(launched):
                return True
            time.sleep(0.2)
        return False


def _tail(container: Container, lines: int) -> list[str]:
    try:
        raw = container.logs(stdout=True, stderr=True, tail=lines)
    except _API_ERRORS:
        return []
    return raw.decode("utf-8", errors="replace").splitlines()[-lines:]


def _engine_hint(exc: BaseException) -> str:
    text = str(exc)
    if "port is already allocated" in text or "address already in use" in text:
        return "the OAuth callback port is in use: is `make scan` running in a terminal?"
    if "No such file or directory" in text or "mount" in text:
        return "check the import and secrets folders in .env exist on the Docker host"
    return "check `docker compose logs viewer` and that the Docker engine is running"


@contextmanager
def _ignoring_api_errors() -> Iterator[None]:
    """Best-effort clean-up calls: the container may already be gone, or the engine busy."""
    try:
        yield
    except _API_ERRORS:
        return
