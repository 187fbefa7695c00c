"""The runner containers of a stack (a pool of each kind: imports, scans), their names, the request files the web
process writes them, and the stack as read from `docker inspect`. Pure data, no Docker SDK: the privileged entrypoint
creates exactly these, the web process only starts, stops, inspects them and reads their logs (docs/security.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from shared.accounts import DEFAULT_ACCOUNT, Refresh
from shared.launch_request import REQUEST_VERSION, LaunchCommand, LaunchRequest
from viewer.launch.launcher import LaunchError

# Where things live inside an ingester container (the compose `ingester` service uses the same paths).
DATA_DIR = "/data"
IMPORTS_DIR = "/imports"
SECRETS_DIR = "/secrets"
REQUESTS_DIR = "/requests"
OAUTH_CONTAINER_PORT = 8765

STACK_LABEL = "gmail-stats.stack"
# Runners per kind: as many accounts as can import (or scan) at the same time from the page.
RUNNERS_PER_KIND = 3
# Container names: a compose project name (letters, digits, `_`, `-`) plus a suffix; also what the filter matches.
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

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
        # Lets OAuth run over http:// endpoints (a local fake or proxy); the endpoints themselves still come only
        # from the user's own credentials.json in the secrets folder.
        "OAUTHLIB_INSECURE_TRANSPORT",
    }
)


@dataclass(frozen=True, slots=True)
class DockerStack:
    """What every launched ingester shares: the image, the data volume and the host folders of one stack.

    `data` and `requests` are named volumes, or absolute host paths (tests); `imports` and `secrets` are absolute
    host paths, as the engine resolves bind mounts on the host, not in the viewer's container.
    """

    name: str
    image: str
    data: str
    imports: str | None = None
    secrets: str | None = None
    network: str | None = None
    requests: str | None = None


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
    user: str = "10001:10001"


def _suffix(slot: int) -> str:
    """The first runner of a kind keeps the names (container, request file) of before pools."""
    return "" if slot == 1 else f"-{slot}"


def runner_name(stack: str, command: LaunchCommand, slot: int = 1) -> str:
    """The fixed name of one runner of a stack's pool; the API filter allows exactly the pool's names."""
    name = f"{stack}-{command}-runner{_suffix(slot)}"
    if not _NAME.fullmatch(name):
        raise LaunchError(f"{stack!r} cannot name a container", hint="use a compose project name of a-z, 0-9, _ and -")
    return name


def _mount_type(source: str) -> Literal["volume", "bind"]:
    return "bind" if source.startswith("/") else "volume"


def runner_spec(
    stack: DockerStack, command: LaunchCommand, *, environment: Mapping[str, str], slot: int = 1
) -> ContainerSpec:
    """One runner of a kind's pool. An import gets no network, no secrets and no port; only a scan gets `/secrets`
    and the stack's network (Google), and only the first scan runner the OAuth callback port on the host's loopback
    (one port: the others' consent completes by pasting the redirect address on the page)."""
    if stack.requests is None:
        raise LaunchError("the viewer's container has no /requests mount", hint="start the stack with compose.yaml")
    env = {k: v for k, v in sorted(environment.items()) if k in ENV_ALLOWLIST}
    # Its printed resume hints are the host's `make …` ones (the page shows its log).
    env.update({"GMAIL_STATS_DB": f"{DATA_DIR}/stats.db", "GMAIL_STATS_COMMAND_STYLE": "make", "PYTHONUNBUFFERED": "1"})
    mounts = [
        MountSpec(DATA_DIR, stack.data, _mount_type(stack.data), read_only=False),
        # The viewer writes requests, the runner only reads them (a read-only mount of the same volume).
        MountSpec(REQUESTS_DIR, stack.requests, _mount_type(stack.requests), read_only=True),
    ]
    ports: dict[str, tuple[str, int]] = {}
    network: str | None = "none"
    if command is LaunchCommand.IMPORT:
        if stack.imports is not None:
            mounts.append(MountSpec(IMPORTS_DIR, stack.imports, "bind", read_only=True))
            # The folder as the person named it (compose passes `.env`'s value, `./imports` by default): the runner
            # records and prints paths under it, and the viewer, told the same words, finds them inside its folder.
            env["GMAIL_STATS_HOST_IMPORT_DIR"] = environment.get("GMAIL_STATS_HOST_IMPORT_DIR") or stack.imports
    else:
        if stack.secrets is None:
            raise LaunchError("the stack names no secrets folder", hint="set GMAIL_STATS_SECRETS in .env")
        mounts.append(MountSpec(SECRETS_DIR, stack.secrets, "bind", read_only=False))
        env.update(
            {
                "GMAIL_STATS_CREDENTIALS": f"{SECRETS_DIR}/credentials.json",
                "GMAIL_STATS_TOKENS": f"{SECRETS_DIR}/tokencache.json",
                "GMAIL_STATS_OAUTH_BIND": "0.0.0.0",
                # Its errors about those files name the host's folder (the page shows them).
                "GMAIL_STATS_HOST_SECRETS": stack.secrets,
            }
        )
        if slot == 1:
            ports = {f"{OAUTH_CONTAINER_PORT}/tcp": ("127.0.0.1", OAUTH_CONTAINER_PORT)}
        network = stack.network
    return ContainerSpec(
        image=stack.image,
        command=("run-request", str(command)) + ((str(slot),) if slot != 1 else ()),
        name=runner_name(stack.name, command, slot),
        environment=env,
        labels={"gmail-stats.role": "ingester", STACK_LABEL: stack.name, "gmail-stats.command": str(command)},
        mounts=tuple(mounts),
        ports=ports,
        network=network,
    )


@dataclass(frozen=True, slots=True)
class Runners:
    """What the web process knows of the runners (the entrypoint's JSON): each kind's pool by name (no scan
    runners: not created, `problem` says why) and where requests go."""

    imports: tuple[str, ...]
    scans: tuple[str, ...] = ()
    requests_dir: str = REQUESTS_DIR
    problem: str | None = None

    def names_for(self, command: LaunchCommand) -> tuple[str, ...]:
        """The pool a request runs in: a settings change (`account`) in the import runners, which write the data
        volume and need nothing else (no network, no secrets)."""
        names = self.scans if command is LaunchCommand.SCAN else self.imports
        if not names:
            raise LaunchError(
                f"there is no {command} runner: {self.problem or 'it was not created'}",
                hint="create the secrets folder named in .env, then `docker compose up -d --force-recreate viewer`",
            )
        return names

    def slots(self) -> list[tuple[LaunchCommand, int, str]]:
        """Every runner: its kind, its place in the pool (from 1) and its name."""
        return [
            (command, slot, name)
            for command, names in ((LaunchCommand.IMPORT, self.imports), (LaunchCommand.SCAN, self.scans))
            for slot, name in enumerate(names, start=1)
        ]

    def request_path(self, name: str) -> Path:
        """Where the runner `name` reads its request (`ingester.runs.run_request` reads the same name)."""
        ((command, slot),) = [(c, s) for c, s, n in self.slots() if n == name]
        return Path(self.requests_dir) / f"{command}{_suffix(slot)}.json"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Runners:
        data = json.loads(text)
        return cls(tuple(data["imports"]), tuple(data["scans"]), data["requests_dir"], data["problem"])


def _relative_import(import_path: str | None) -> str:
    """The request's path inside the import folder, refused when it could leave it (the ingester checks again)."""
    if not import_path:
        raise LaunchError("an import needs a file", hint="choose a file from the import folder")
    relative = PurePosixPath(import_path)
    if relative.is_absolute() or ".." in relative.parts or "\x00" in import_path:
        raise LaunchError(f"{import_path!r} is not inside the import folder", hint="choose a file it lists")
    return relative.as_posix()


def request_document(request: LaunchRequest, *, now: float) -> bytes:
    """The run request file a runner reads (`ingester.runs.run_request` validates it as untrusted input)."""
    document: dict[str, object] = {
        "version": REQUEST_VERSION,
        "command": str(request.command),
        "import_path": None,
        "resume_run_id": None,
        "launch_token": request.launch_token,
        "written_at": round(now, 3),
    }
    if request.command is LaunchCommand.ACCOUNT:
        # A settings change (run by an import runner): the account's new refresh interval and/or address.
        if request.refresh is None and request.address is None:
            raise LaunchError("a settings change needs a refresh interval or an address", hint="choose one")
        try:
            refresh = str(Refresh(request.refresh)) if request.refresh is not None else None
        except ValueError:
            raise LaunchError(f"{request.refresh!r} is no refresh interval", hint="off, hourly or daily") from None
        document.update(account=request.account, unattended=False, refresh=refresh, address=request.address)
    elif request.command is LaunchCommand.IMPORT:
        document["import_path"] = _relative_import(request.import_path)
    if request.resume_run_id is not None:
        document["resume_run_id"] = int(request.resume_run_id)
    if request.account != DEFAULT_ACCOUNT or request.unattended:  # absent: the default account, attended
        document.update(account=request.account, unattended=request.unattended)
    return json.dumps(document, sort_keys=True).encode()


def request_token(document: bytes) -> str | None:
    """The launch token of a request this viewer wrote earlier (to own its run again after a restart)."""
    try:
        token = json.loads(document).get("launch_token")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) else None


def stack_from_container(attrs: Mapping[str, Any]) -> DockerStack:
    """The stack a container belongs to, from its `docker inspect` data: its image, compose project, network and
    the host side of its `/data`, `/requests`, `/imports` and `/secrets` mounts (or the secrets label), whatever
    folder compose was started from."""
    config = attrs.get("Config") or {}
    labels: Mapping[str, str] = config.get("Labels") or {}
    mounts = {m.get("Destination"): m for m in attrs.get("Mounts") or []}
    if DATA_DIR not in mounts:
        raise LaunchError("the viewer's container has no /data mount", hint="start the stack with compose.yaml")
    secrets = mounts.get(SECRETS_DIR, {}).get("Source")
    # Our label names the stack's secrets folder; compose resolves relative bind paths against the project
    # directory, but not labels, so that one is resolved here the same way.
    if secrets is None and "gmail-stats.secrets" in labels:
        workdir = labels.get("com.docker.compose.project.working_dir", "/")
        secrets = str(PurePosixPath(workdir) / labels["gmail-stats.secrets"])
    networks = sorted(((attrs.get("NetworkSettings") or {}).get("Networks") or {}).keys())
    return DockerStack(
        name=labels.get("com.docker.compose.project") or str(attrs.get("Name", "gmail-stats")).lstrip("/"),
        image=str(config.get("Image")),
        data=str(_source(mounts[DATA_DIR])),
        imports=mounts.get(IMPORTS_DIR, {}).get("Source"),
        secrets=os.path.normpath(secrets) if secrets is not None else None,
        network=networks[0] if networks else None,
        requests=_source(mounts[REQUESTS_DIR]) if REQUESTS_DIR in mounts else None,
    )


def _source(mount: Mapping[str, Any]) -> str | None:
    value = mount.get("Name") if mount.get("Type") == "volume" else mount.get("Source")
    return str(value) if value is not None else None


def started_unix(started_at: str) -> float:
    """The engine's RFC 3339 `StartedAt` (nanoseconds, UTC) as Unix seconds; 0 when unreadable."""
    try:
        return datetime.fromisoformat(started_at).timestamp()
    except ValueError:
        return 0.0
