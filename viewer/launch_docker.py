"""The `docker` launcher: each run is a new, hardened, one-shot ingester container (the only Docker SDK user).

It never takes an image, mount, argv or environment from a request: `viewer.container_spec` builds everything
from the stack's fixed description and a `LaunchRequest`.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import Any

import docker
import requests
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Mount

from viewer.container_spec import (
    DATA_DIR,
    IMPORTS_DIR,
    INGESTER_ROLE,
    ROLE_LABEL,
    SECRETS_DIR,
    STACK_LABEL,
    TOKEN_LABEL,
    ContainerSpec,
    DockerStack,
    container_spec,
)
from viewer.launcher import CANCEL_GRACE_SECONDS, LOG_TAIL_LINES, Launched, LaunchError, LaunchRequest

# Labels compose puts on its containers, and ours on the viewer naming its stack's secrets folder (compose resolves
# relative bind paths against the project directory, but not labels, so that one is resolved here the same way).
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
COMPOSE_WORKDIR_LABEL = "com.docker.compose.project.working_dir"
SECRETS_LABEL = "gmail-stats.secrets"

_FINISHED_STATES = ("exited", "dead")
_ALIVE_STATES = frozenset({"created", "running", "restarting", "paused"})
_API_ERRORS = (DockerException, requests.exceptions.RequestException)


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


def stack_from_container(attrs: Mapping[str, Any]) -> DockerStack:
    """The stack a container belongs to, from its `docker inspect` data: its image, compose project, network and
    the host side of its `/data`, `/imports` and `/secrets` mounts (or the secrets label), whatever folder compose
    was started from."""
    config = attrs.get("Config") or {}
    labels: Mapping[str, str] = config.get("Labels") or {}
    mounts = {m.get("Destination"): m for m in attrs.get("Mounts") or []}
    data = mounts.get(DATA_DIR)
    if data is None:
        raise LaunchError("the viewer's container has no /data mount", hint="start the stack with compose.yaml")
    data_source = data.get("Name") if data.get("Type") == "volume" else data.get("Source")
    imports = mounts.get(IMPORTS_DIR, {}).get("Source")
    secrets = mounts.get(SECRETS_DIR, {}).get("Source")
    if secrets is None and SECRETS_LABEL in labels:
        secrets = str(PurePosixPath(labels.get(COMPOSE_WORKDIR_LABEL, "/")) / labels[SECRETS_LABEL])
    networks = sorted(((attrs.get("NetworkSettings") or {}).get("Networks") or {}).keys())
    return DockerStack(
        name=labels.get(COMPOSE_PROJECT_LABEL) or str(attrs.get("Name", "gmail-stats")).lstrip("/"),
        image=str(config.get("Image")),
        data=str(data_source),
        imports=imports,
        secrets=_normalise(secrets),
        network=networks[0] if networks else None,
    )


def _normalise(path: str | None) -> str | None:
    return os.path.normpath(path) if path is not None else None


class DockerLauncher:
    """Launches, watches, cancels and removes the ingester containers of one stack."""

    @classmethod
    def from_settings(cls, settings: object) -> DockerLauncher:
        """The launcher of the stack whose container this viewer runs in (found by its hostname, the container id);
        the stack comes from that container, not from `settings`.

        Allow-listed tuning variables of the viewer's own environment are passed on, as a child process would
        inherit them from the process launcher.
        """
        client = connect()
        try:
            own = client.containers.get(socket.gethostname())
        except _API_ERRORS as exc:
            client.close()
            raise LaunchError(
                f"cannot find the viewer's own container: {exc}",
                hint="GMAIL_STATS_LAUNCHER=docker works inside the compose stack; use `process` elsewhere",
            ) from exc
        return cls(
            client,
            stack_from_container(own.attrs),
            environment=dict(os.environ),
        )

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
