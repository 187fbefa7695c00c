"""The one container spec a launch may produce: fixed argv, the stack's mounts, allow-listed env, labels, hardening.

Pure data, no Docker SDK: `launch_docker` turns a `ContainerSpec` into API calls, and a unit test pins it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from viewer.launcher import LaunchCommand, LaunchError, LaunchRequest

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
        # Lets OAuth run over http:// endpoints (a local fake or proxy); the endpoints themselves still come only
        # from the user's own credentials.json in the secrets folder.
        "OAUTHLIB_INSECURE_TRANSPORT",
    }
)


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
