"""The exact runner containers the entrypoint may create and the request file the web process may write: the
engine's socket is the viewer's one dangerous tool, so pin everything it is used for."""

from __future__ import annotations

import json

import pytest

from shared.launch_request import LaunchCommand, LaunchRequest
from viewer.launch.container_spec import (
    ContainerSpec,
    DockerStack,
    MountSpec,
    Runners,
    request_document,
    request_token,
    runner_name,
    runner_spec,
    stack_from_container,
    started_unix,
)
from viewer.launch.launch_docker import create_kwargs
from viewer.launch.launcher import LaunchError

STACK = DockerStack(
    name="gmail-stats",
    image="gmail-stats:local",
    data="gmail-stats-data",
    imports="/home/me/gmail stats/imports",
    secrets="/home/me/gmail stats/secrets",
    network="gmail-stats_default",
    requests="gmail-stats_requests",
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
DATA = MountSpec("/data", "gmail-stats-data", "volume", read_only=False)
REQUESTS = MountSpec("/requests", "gmail-stats_requests", "volume", read_only=True)
HARDENING = {
    "cap_drop": ("ALL",),
    "security_opt": ("no-new-privileges:true",),
    "read_only": True,
    "tmpfs": {"/tmp": "rw,nosuid,nodev,size=64m"},
    "privileged": False,
    "user": "10001:10001",
}


@pytest.mark.parametrize("named", ["./imports", "/srv/mail/imports"])
def test_the_import_runner_names_the_import_folder_as_the_viewer_was_told(named: str) -> None:
    """Issue #27: the runner recorded the mount's absolute path while compose told the viewer `./imports`, so the
    page refused to resume every page-started import; both now use the words `.env` gave."""
    spec = runner_spec(STACK, LaunchCommand.IMPORT, environment={**VIEWER_ENV, "GMAIL_STATS_HOST_IMPORT_DIR": named})
    assert spec.environment["GMAIL_STATS_HOST_IMPORT_DIR"] == named


def test_the_import_runner_has_no_network_no_secrets_and_no_port() -> None:
    spec = runner_spec(STACK, LaunchCommand.IMPORT, environment=VIEWER_ENV)
    assert spec == ContainerSpec(
        image="gmail-stats:local",
        command=("run-request", "import"),
        name="gmail-stats-import-runner",
        environment={
            "GMAIL_STATS_API_ENDPOINT": "http://fake-google:8080/",
            "GMAIL_STATS_PARSE_WORKERS": "2",
            "GMAIL_STATS_DB": "/data/stats.db",
            "GMAIL_STATS_COMMAND_STYLE": "make",
            "PYTHONUNBUFFERED": "1",
            "GMAIL_STATS_HOST_IMPORT_DIR": "/home/me/gmail stats/imports",
        },
        labels={"gmail-stats.role": "ingester", "gmail-stats.stack": "gmail-stats", "gmail-stats.command": "import"},
        mounts=(DATA, REQUESTS, MountSpec("/imports", "/home/me/gmail stats/imports", "bind", read_only=True)),
        ports={},
        network="none",
        **HARDENING,  # type: ignore[arg-type]
    )


def test_only_the_scan_runner_gets_secrets_the_network_and_the_loopback_callback_port() -> None:
    spec = runner_spec(STACK, LaunchCommand.SCAN, environment={})
    assert (spec.name, spec.command, spec.network) == (
        "gmail-stats-scan-runner",
        ("run-request", "scan"),
        "gmail-stats_default",
    )
    assert spec.ports == {"8765/tcp": ("127.0.0.1", 8765)}
    assert spec.mounts == (DATA, REQUESTS, MountSpec("/secrets", "/home/me/gmail stats/secrets", "bind", False))
    assert spec.environment == {
        "GMAIL_STATS_DB": "/data/stats.db",
        "GMAIL_STATS_COMMAND_STYLE": "make",
        "PYTHONUNBUFFERED": "1",
        "GMAIL_STATS_CREDENTIALS": "/secrets/credentials.json",
        "GMAIL_STATS_TOKENS": "/secrets/tokencache.json",
        "GMAIL_STATS_OAUTH_BIND": "0.0.0.0",
        "GMAIL_STATS_HOST_SECRETS": "/home/me/gmail stats/secrets",
    }


def test_sdk_arguments_are_exactly_these() -> None:
    kwargs = create_kwargs(runner_spec(STACK, LaunchCommand.IMPORT, environment={}))
    assert kwargs == {
        "image": "gmail-stats:local",
        "command": ["run-request", "import"],
        "name": "gmail-stats-import-runner",
        "user": "10001:10001",
        "environment": {
            "GMAIL_STATS_DB": "/data/stats.db",
            "GMAIL_STATS_COMMAND_STYLE": "make",
            "PYTHONUNBUFFERED": "1",
            "GMAIL_STATS_HOST_IMPORT_DIR": "/home/me/gmail stats/imports",
        },
        "labels": {"gmail-stats.role": "ingester", "gmail-stats.stack": "gmail-stats", "gmail-stats.command": "import"},
        "mounts": [
            {"Target": "/data", "Source": "gmail-stats-data", "Type": "volume", "ReadOnly": False},
            {"Target": "/requests", "Source": "gmail-stats_requests", "Type": "volume", "ReadOnly": True},
            {"Target": "/imports", "Source": "/home/me/gmail stats/imports", "Type": "bind", "ReadOnly": True},
        ],
        "ports": {},
        "network": "none",
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
    for forbidden in ("network_mode", "pid_mode", "ipc_mode", "userns_mode", "devices", "cap_add", "volumes"):
        assert forbidden not in kwargs


def test_host_path_data_and_requests_are_bind_mounts_and_a_scan_needs_a_secrets_folder() -> None:
    stack = DockerStack(name="t", image="i", data="/srv/data", requests="/srv/requests")
    spec = runner_spec(stack, LaunchCommand.IMPORT, environment={})
    assert spec.mounts == (
        MountSpec("/data", "/srv/data", "bind", read_only=False),
        MountSpec("/requests", "/srv/requests", "bind", read_only=True),
    )
    with pytest.raises(LaunchError):
        runner_spec(stack, LaunchCommand.SCAN, environment={})
    with pytest.raises(LaunchError):
        runner_spec(DockerStack(name="t", image="i", data="d"), LaunchCommand.IMPORT, environment={})


@pytest.mark.parametrize("stack", ["Upper", "a b", "a/b", "-x", "x" * 60, "a.b"])
def test_names_the_filter_could_mismatch_are_refused(stack: str) -> None:
    with pytest.raises(LaunchError):
        runner_name(stack, LaunchCommand.IMPORT)


def test_the_request_document_is_exact_and_its_token_can_be_read_back() -> None:
    request = LaunchRequest(
        LaunchCommand.IMPORT, launch_token="ab" * 16, import_path="Takeout/All.mbox", resume_run_id=3
    )
    document = request_document(request, now=1700000000.12345)
    assert json.loads(document) == {
        "version": 1,
        "command": "import",
        "import_path": "Takeout/All.mbox",
        "resume_run_id": 3,
        "launch_token": "ab" * 16,
        "written_at": 1700000000.123,
    }
    assert request_token(document) == "ab" * 16
    assert request_token(b"\xff") is None
    scan = json.loads(request_document(LaunchRequest(LaunchCommand.SCAN, launch_token="t"), now=1.0))
    assert (scan["import_path"], scan["resume_run_id"]) == (None, None)


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../b.mbox", "", None, "a\x00.mbox"])
def test_import_paths_outside_the_import_folder_are_refused(path: str | None) -> None:
    request = LaunchRequest(LaunchCommand.IMPORT, launch_token="x", import_path=path)
    with pytest.raises(LaunchError):
        request_document(request, now=0.0)


def test_a_settings_change_is_an_account_request_for_an_import_runner() -> None:
    request = LaunchRequest(LaunchCommand.ACCOUNT, launch_token="ab" * 16, account="old", refresh="hourly")
    assert json.loads(request_document(request, now=2.0)) == {
        "version": 1,
        "command": "account",
        "import_path": None,
        "resume_run_id": None,
        "launch_token": "ab" * 16,
        "written_at": 2.0,
        "account": "old",
        "unattended": False,
        "refresh": "hourly",
        "address": None,
    }
    assert Runners(("a-import-runner",), ("a-scan-runner",)).names_for(LaunchCommand.ACCOUNT) == ("a-import-runner",)
    for bad in (LaunchRequest(LaunchCommand.ACCOUNT, "t"), LaunchRequest(LaunchCommand.ACCOUNT, "t", refresh="weekly")):
        with pytest.raises(LaunchError):
            request_document(bad, now=0.0)


def test_runners_round_trip_and_a_missing_scan_runner_says_why() -> None:
    runners = Runners(("s-import-runner", "s-import-runner-2"), (), problem="no secrets folder")
    assert Runners.from_json(runners.to_json()) == runners
    assert runners.names_for(LaunchCommand.IMPORT) == ("s-import-runner", "s-import-runner-2")
    assert str(runners.request_path("s-import-runner-2")) == "/requests/import-2.json"
    with pytest.raises(LaunchError, match="no secrets folder"):
        runners.names_for(LaunchCommand.SCAN)


def test_a_pool_has_one_request_file_and_name_per_runner_and_only_its_first_scan_publishes_the_callback() -> None:
    """Two accounts' runs side by side take two runners; the first of each kind keeps the name of before pools."""
    second = runner_spec(STACK, LaunchCommand.SCAN, environment={}, slot=2)
    first = runner_spec(STACK, LaunchCommand.SCAN, environment={})
    assert (second.name, second.command, second.ports) == (
        "gmail-stats-scan-runner-2",
        ("run-request", "scan", "2"),
        {},
    )
    assert (second.mounts, second.network, second.environment) == (first.mounts, first.network, first.environment)
    assert runner_spec(STACK, LaunchCommand.IMPORT, environment={}, slot=3).command == ("run-request", "import", "3")
    runners = Runners(("a-import-runner", "a-import-runner-2"), ("a-scan-runner", "a-scan-runner-2"))
    assert [str(runners.request_path(name)) for _, _, name in runners.slots()] == [
        "/requests/import.json",
        "/requests/import-2.json",
        "/requests/scan.json",
        "/requests/scan-2.json",
    ]


def test_started_at_is_read_with_its_fraction() -> None:
    assert started_unix("2026-12-01T05:50:00.123456789Z") == pytest.approx(1796103000.123456789)
    assert started_unix("0001-01-01T00:00:00Z") < 0
    assert started_unix("garbage") == 0.0


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
            {"Type": "volume", "Name": "mystack_requests", "Source": "/var/lib/docker/y", "Destination": "/requests"},
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
        requests="mystack_requests",
    )
    with pytest.raises(LaunchError):
        stack_from_container({"Config": {}, "Mounts": []})
