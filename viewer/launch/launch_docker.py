"""The Docker engine adapter (the only Docker SDK user): the client, its errors, a runner's state, and creating the
stack's runners.

The privileged entrypoint creates the runners (`provision_runners`, the only `create` call); the web process's
launcher (`viewer.launch.runner_launcher`) then only starts, kills, inspects or reads the logs of one by name.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.types import Mount

from shared.launch_request import LaunchCommand
from viewer.launch.container_spec import (
    REQUESTS_DIR,
    RUNNERS_PER_KIND,
    ContainerSpec,
    DockerStack,
    Runners,
    runner_spec,
    stack_from_container,
)
from viewer.launch.launcher import LaunchError

# Written by the entrypoint (root) into a root-owned tmpfs; the web process reads it.
RUNNERS_FILE = Path("/run/gmail-stats/runners.json")
API_ERRORS = (DockerException, requests.exceptions.RequestException)
DockerClient = docker.DockerClient


def create_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """The `containers.create` keyword arguments: the spec's fields, as the SDK takes them, with no stdin and no
    TTY (the spec never sets the host's namespaces)."""
    kwargs: dict[str, Any] = {field.name: getattr(spec, field.name) for field in fields(spec)}
    kwargs.update(
        command=list(spec.command),
        mounts=[Mount(m.target, m.source, type=m.type, read_only=m.read_only) for m in spec.mounts],
        cap_drop=list(spec.cap_drop),
        security_opt=list(spec.security_opt),
        stdin_open=False,
        tty=False,
        detach=True,
    )
    return kwargs


def runner_state(client: DockerClient, name: str) -> dict[str, Any] | None:
    """The engine's `State` of a container, None when there is no such container."""
    try:
        state: dict[str, Any] = client.api.inspect_container(name)["State"]
    except NotFound:
        return None
    return state


def connect() -> DockerClient:
    """A client for the engine named by DOCKER_HOST (the viewer: its API filter), at the engine's API version."""
    try:
        return docker.from_env(version="auto", timeout=30)
    except API_ERRORS as exc:
        raise LaunchError(
            f"cannot reach the Docker engine: {exc}",
            hint="the viewer needs /var/run/docker.sock mounted (see compose.yaml)",
        ) from exc


def provision_runners(
    client: DockerClient,
    stack: DockerStack,
    *,
    environment: Mapping[str, str],
    requests_dir: str,
    per_kind: int = RUNNERS_PER_KIND,
) -> Runners:
    """Creates (not starts) the stack's pools of import and scan runners, replacing stopped ones so they match this
    image; a running one is left alone for the web process to own again. The scan runners are skipped when their
    secrets folder is missing: imports never need it."""

    def pool(command: LaunchCommand) -> tuple[str, ...]:
        specs = (runner_spec(stack, command, environment=environment, slot=slot) for slot in range(1, per_kind + 1))
        return tuple(_create_runner(client, spec) for spec in specs)

    imports = pool(LaunchCommand.IMPORT)
    try:
        scans, problem = pool(LaunchCommand.SCAN), None
    except LaunchError as exc:
        scans, problem = (), f"{exc} ({exc.hint})"
    return Runners(imports, scans, requests_dir=requests_dir, problem=problem)


def provision_own_stack(client: DockerClient) -> Runners:
    """`provision_runners` for the stack of the container this runs in (found by its hostname, the container id),
    passing on the allow-listed tuning variables of its environment."""
    try:
        own = client.api.inspect_container(socket.gethostname())
    except API_ERRORS as exc:
        raise LaunchError(
            f"cannot find the viewer's own container: {exc}",
            hint="GMAIL_STATS_LAUNCHER=docker works inside the compose stack; use `process` elsewhere",
        ) from exc
    stack = stack_from_container(own)
    return provision_runners(client, stack, environment=dict(os.environ), requests_dir=REQUESTS_DIR)


def _create_runner(client: DockerClient, spec: ContainerSpec) -> str:
    try:
        if client.api.inspect_container(spec.name)["State"]["Running"]:
            return spec.name
        client.api.remove_container(spec.name, force=True)
    except NotFound:
        pass
    except API_ERRORS as exc:
        raise LaunchError(f"cannot replace the runner {spec.name}: {exc}", hint=engine_hint(exc)) from exc
    try:
        client.containers.create(**create_kwargs(spec))
    except ImageNotFound as exc:
        raise LaunchError(f"the ingester image {spec.image} is missing", hint="build it: docker compose build") from exc
    except API_ERRORS as exc:
        raise LaunchError(f"cannot create the runner {spec.name}: {exc}", hint=engine_hint(exc)) from exc
    return spec.name


def engine_hint(exc: BaseException) -> str:
    text = str(exc)
    if "port is already allocated" in text or "address already in use" in text:
        return "the OAuth callback port is in use: is `make scan` running in a terminal?"
    if "No such file or directory" in text or "mount" in text or "bind source path" in text:
        return "check the import and secrets folders in .env exist on the Docker host"
    if "403" in text:
        return "the Docker API filter refused the call"
    return "check `docker compose logs viewer` and that the Docker engine is running"
