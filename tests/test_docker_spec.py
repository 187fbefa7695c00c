"""The exact container the Docker launcher may create: the socket is the viewer's one dangerous tool, so pin it."""

from __future__ import annotations

import pytest

from viewer.container_spec import ContainerSpec, DockerStack, MountSpec, container_spec
from viewer.launch_docker import create_kwargs, stack_from_container
from viewer.launcher import LaunchCommand, LaunchError, LaunchRequest

STACK = DockerStack(
    name="gmail-stats",
    image="gmail-stats:local",
    data="gmail-stats-data",
    imports="/home/me/gmail stats/imports",
    secrets="/home/me/gmail stats/secrets",
    network="gmail-stats_default",
)
VIEWER_ENV = {
    "GMAIL_STATS_PARSE_WORKERS": "2",
    "GMAIL_STATS_API_ENDPOINT": "http://fake-google:8080/",
    # Never passed on: paths, the token, the listener, and anything not ours.
    "GMAIL_STATS_DB": "/etc/passwd",
    "GMAIL_STATS_LAUNCH_TOKEN": "stolen",
    "GMAIL_STATS_OAUTH_PORT": "22",
    "GMAIL_STATS_LAUNCHER": "docker",
    "LD_PRELOAD": "/tmp/evil.so",
    "PATH": "/tmp",
}
FIXED_ENV = {
    "GMAIL_STATS_DB": "/data/stats.db",
    "GMAIL_STATS_CREDENTIALS": "/secrets/credentials.json",
    "GMAIL_STATS_TOKENS": "/secrets/tokencache.json",
    "GMAIL_STATS_OAUTH_BIND": "0.0.0.0",
    "PYTHONUNBUFFERED": "1",
}
MOUNTS = (
    MountSpec("/data", "gmail-stats-data", "volume", read_only=False),
    MountSpec("/imports", "/home/me/gmail stats/imports", "bind", read_only=True),
    MountSpec("/secrets", "/home/me/gmail stats/secrets", "bind", read_only=False),
)
HARDENING = {
    "cap_drop": ("ALL",),
    "security_opt": ("no-new-privileges:true",),
    "read_only": True,
    "tmpfs": {"/tmp": "rw,nosuid,nodev,size=64m"},
    "privileged": False,
}


def test_import_container_spec_is_exact() -> None:
    request = LaunchRequest(
        LaunchCommand.IMPORT, launch_token="tok123456789abcdef", import_path="Takeout/Mail/All.mbox"
    )
    spec = container_spec(STACK, request, environment=VIEWER_ENV)
    assert spec == ContainerSpec(
        image="gmail-stats:local",
        command=("import", "/imports/Takeout/Mail/All.mbox", "--quiet"),
        name="gmail-stats-ingester-tok123456789",
        environment={
            "GMAIL_STATS_API_ENDPOINT": "http://fake-google:8080/",
            "GMAIL_STATS_PARSE_WORKERS": "2",
            **FIXED_ENV,
            "GMAIL_STATS_LAUNCH_TOKEN": "tok123456789abcdef",
        },
        labels={
            "gmail-stats.role": "ingester",
            "gmail-stats.stack": "gmail-stats",
            "gmail-stats.launch-token": "tok123456789abcdef",
            "gmail-stats.command": "import",
        },
        mounts=MOUNTS,
        ports={},
        network="gmail-stats_default",
        **HARDENING,  # type: ignore[arg-type]
    )


def test_scan_publishes_the_oauth_port_on_loopback_only_and_resume_is_labelled() -> None:
    request = LaunchRequest(LaunchCommand.SCAN, launch_token="t" * 32, resume_run_id=7)
    spec = container_spec(STACK, request, environment={})
    assert spec.command == ("scan", "--resume", "7", "--quiet")
    assert spec.ports == {"8765/tcp": ("127.0.0.1", 8765)}
    assert spec.labels["gmail-stats.resume-run-id"] == "7"
    assert spec.environment == {**FIXED_ENV, "GMAIL_STATS_LAUNCH_TOKEN": "t" * 32}
    assert spec.mounts == MOUNTS


def test_sdk_arguments_are_exactly_these() -> None:
    request = LaunchRequest(LaunchCommand.IMPORT, launch_token="abc", import_path="a.mbox", resume_run_id=3)
    kwargs = create_kwargs(container_spec(STACK, request, environment={}))
    assert kwargs == {
        "image": "gmail-stats:local",
        "command": ["import", "/imports/a.mbox", "--resume", "3", "--quiet"],
        "name": "gmail-stats-ingester-abc",
        "environment": {**FIXED_ENV, "GMAIL_STATS_LAUNCH_TOKEN": "abc"},
        "labels": {
            "gmail-stats.role": "ingester",
            "gmail-stats.stack": "gmail-stats",
            "gmail-stats.launch-token": "abc",
            "gmail-stats.command": "import",
            "gmail-stats.resume-run-id": "3",
        },
        "mounts": [
            {"Target": "/data", "Source": "gmail-stats-data", "Type": "volume", "ReadOnly": False},
            {"Target": "/imports", "Source": "/home/me/gmail stats/imports", "Type": "bind", "ReadOnly": True},
            {"Target": "/secrets", "Source": "/home/me/gmail stats/secrets", "Type": "bind", "ReadOnly": False},
        ],
        "ports": {},
        "network": "gmail-stats_default",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "read_only": True,
        "tmpfs": {"/tmp": "rw,nosuid,nodev,size=64m"},
        "privileged": False,
        "stdin_open": False,
        "tty": False,
        "detach": True,
    }
    # Nothing that could reach the host's namespaces or devices is ever set.
    for forbidden in ("network_mode", "pid_mode", "ipc_mode", "userns_mode", "devices", "cap_add", "volumes", "user"):
        assert forbidden not in kwargs


def test_a_host_path_data_folder_is_a_bind_mount() -> None:
    stack = DockerStack(name="t", image="i", data="/srv/data")
    spec = container_spec(stack, LaunchRequest(LaunchCommand.SCAN, launch_token="x"), environment={})
    assert spec.mounts == (MountSpec("/data", "/srv/data", "bind", read_only=False),)
    assert spec.network is None


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../b.mbox", "", None, "a\x00.mbox"])
def test_import_paths_outside_the_import_folder_are_refused(path: str | None) -> None:
    request = LaunchRequest(LaunchCommand.IMPORT, launch_token="x", import_path=path)
    with pytest.raises(LaunchError):
        container_spec(STACK, request, environment={})


def test_the_stack_comes_from_the_viewers_own_container() -> None:
    attrs = {
        "Name": "/gmail-stats-viewer-1",
        "Config": {
            "Image": "gmail-stats:local",
            "Labels": {
                "com.docker.compose.project": "mystack",
                "com.docker.compose.project.working_dir": "/home/me/gmail stats",
                "gmail-stats.secrets": "./secrets",
            },
        },
        "Mounts": [
            {
                "Type": "volume",
                "Name": "gmail-stats-data",
                "Source": "/var/lib/docker/volumes/x",
                "Destination": "/data",
            },
            {"Type": "bind", "Source": "/home/me/gmail stats/imports", "Destination": "/imports"},
            {"Type": "bind", "Source": "/var/run/docker.sock", "Destination": "/var/run/docker.sock"},
        ],
        "NetworkSettings": {"Networks": {"mystack_default": {}}},
    }
    assert stack_from_container(attrs) == DockerStack(
        name="mystack",
        image="gmail-stats:local",
        data="gmail-stats-data",
        imports="/home/me/gmail stats/imports",
        secrets="/home/me/gmail stats/secrets",
        network="mystack_default",
    )
    with pytest.raises(LaunchError):
        stack_from_container({"Config": {}, "Mounts": []})
