"""The viewer's confinement in the running compose stack: a read-only, unprivileged web process with pids and
memory limits, the Docker API filter it reaches the engine through (a dead filter restarts the viewer), and every
attack a compromised web process could try against the engine (docs/security.md).

Each test brings up a project of its own (tests/docker/stack.py) and takes it down.
"""

from __future__ import annotations

import json

import pytest

from tests.docker.dockerenv import IMAGE, container_state, docker, wait_for
from tests.docker.stack import Stack
from tests.support.factories import generate_messages, write_mbox
from viewer.launch.container_spec import STACK_LABEL

pytestmark = [
    pytest.mark.docker,
]


def test_onboarding_status_and_a_viewer_that_cannot_write_data(stack: Stack) -> None:
    status = stack.status()
    assert (status["db"], status["active_run"], status["last_run"], status["ingest_lock_held"]) == (
        "missing",
        None,
        None,
        False,
    )
    assert stack.get("/api/imports")["files"] == []
    probe = stack.compose(
        "exec", "-T", "viewer", "sh", "-c", "touch /data/stats.db; grep -E '^(Uid|CapEff)' /proc/1/status"
    )
    assert "Read-only file system" in probe.stderr
    assert probe.stdout.split() == ["Uid:", "10001", "10001", "10001", "10001", "CapEff:", "0000000000000000"]
    assert stack.http.get("/api/status", headers={"Host": "evil.example"}).status_code == 403
    viewer = stack.compose("ps", "--quiet", "viewer").stdout.strip()
    limits = json.loads(docker("inspect", viewer).stdout)[0]["HostConfig"]
    assert (limits["PidsLimit"], limits["Memory"]) == (256, 1024**3)  # compose.yaml: pids_limit, mem_limit
    assert json.loads(docker("inspect", viewer).stdout)[0]["State"]["Health"]["Status"] == "healthy"


KILL_THE_FILTER = r"""
import os, signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if f.read().split(b"\0")[0].endswith(b"haproxy"):
            os.kill(int(pid), signal.SIGKILL)
            print(pid)
"""


def test_a_dead_api_filter_makes_the_viewer_restart_and_launch_again(stack: Stack) -> None:
    viewer = stack.compose("ps", "--quiet", "viewer").stdout.strip()
    restarts = json.loads(docker("inspect", viewer).stdout)[0]["RestartCount"]
    killed = stack.viewer_exec("python3", "-c", KILL_THE_FILTER, user="10002")  # HAProxy's own user may signal it
    assert killed.returncode == 0 and killed.stdout.split(), killed.stderr

    def restarted_and_healthy() -> bool:
        found = json.loads(docker("inspect", viewer).stdout)[0]
        return bool(found["RestartCount"] > restarts and found["State"].get("Health", {}).get("Status") == "healthy")

    wait_for(restarted_and_healthy, timeout=180, interval=1, what="the viewer restarted with its filter, healthy")
    logs = docker("logs", viewer).stderr
    assert "the Docker API filter stopped; stopping the viewer so that it restarts" in logs
    expected = write_mbox(stack.imports / "after.mbox", generate_messages(count=40, body_bytes=100, senders=5))
    response = stack.post("/api/runs", {"source": "mbox", "path": "after.mbox"})  # the filter answers again
    assert response.status_code == 202, response.text
    run = stack.wait_run(response.json()["run_id"], "done", "failed")
    assert (run["state"], run["messages_new"]) == ("done", sum(expected.values()))


# Run inside the viewer container with the web process's exact credentials: everything an attacker who has code
# execution in the web process could try against the engine, directly or through the API filter.
ATTACK = r"""
import json, os, socket, sys

viewer, runner, sentinel, image = sys.argv[1:5]
FILTER = "/run/docker-api-filter/docker.sock"

def creds(pid):
    lines = open(f"/proc/{pid}/status").read().splitlines()
    return {k: v.split() for k, v in (line.split(":", 1) for line in lines) if k in ("Uid", "Gid", "Groups", "CapEff")}

def connect(path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return "connected"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()

def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(FILTER)
        s.sendall(head.encode() + b"\r\n" + data)  # one write: a refusal may close before a second
        return int(s.recv(64).split()[1])

host_config = {"Binds": ["/:/host"], "Privileged": True}
root_container = {"Image": image, "Cmd": ["cat", "/host/etc/shadow"], "HostConfig": host_config}
out = {"same_creds": creds("self") == creds(1), "creds": creds("self")}
out["engine_socket"] = connect("/var/run/docker.sock")
others = [p for p in os.listdir("/proc") if p.isdigit() and p not in ("1", str(os.getpid()))]
out["engine_socket_via_proc"] = sorted({connect(f"/proc/{p}/root/var/run/docker.sock") for p in others})
out["create"] = call("POST", "/v1.41/containers/create", root_container)
out["create_unversioned"] = call("POST", "/containers/create?name=x", root_container)
out["list"] = call("GET", "/v1.41/containers/json?all=1")
out["start_viewer"] = call("POST", f"/v1.41/containers/{viewer}/start")
out["start_sentinel"] = call("POST", f"/v1.41/containers/{sentinel}/start")
out["start_encoded"] = call("POST", f"/v1.41/containers/{runner}%2F..%2F{sentinel}/start")
out["start_old_api_with_host_config"] = call("POST", f"/v1.23/containers/{runner}/start", host_config)
out["exec"] = call("POST", f"/v1.41/containers/{runner}/exec", {"Cmd": ["id"]})
out["update"] = call("POST", f"/v1.41/containers/{runner}/update", {"Privileged": True})
out["images"] = call("GET", "/v1.41/images/json")
out["volumes"] = call("GET", "/v1.41/volumes")
out["remove_sentinel"] = call("DELETE", f"/v1.41/containers/{sentinel}?v=False&link=False&force=False")
out["remove_runner_forced"] = call("DELETE", f"/v1.41/containers/{runner}?v=False&link=False&force=True")
out["remove_runner_with_volumes"] = call("DELETE", f"/v1.41/containers/{runner}?v=True&link=False&force=False")
out["ping"] = call("GET", "/_ping")
out["inspect_runner"] = call("GET", f"/v1.41/containers/{runner}/json")
try:
    import docker
    client = docker.DockerClient(base_url="unix://" + FILTER)
    client.containers.create(image, "id", privileged=True, volumes=["/:/host"])
    out["sdk_create"] = "created"
except docker.errors.APIError as exc:
    out["sdk_create"] = exc.status_code
print(json.dumps(out))
"""


def test_the_web_process_cannot_create_containers_read_the_socket_or_start_anything_but_the_runners(
    stack: Stack,
) -> None:
    viewer = stack.compose("ps", "--quiet", "viewer").stdout.strip()
    sentinel = f"{stack.name}-sentinel"
    docker("create", "--name", sentinel, "--label", f"{STACK_LABEL}={stack.name}", IMAGE, "runs", "--json")
    web = stack.viewer_exec("grep", "-E", "^(Uid|Gid|Groups):", "/proc/1/status").stdout.split("\n")
    uid, gid = web[0].split()[1], web[1].split()[1]
    groups = web[2].split()[1:]
    identity = [f"--reuid={uid}", f"--regid={gid}", f"--groups={','.join(groups)}" if groups else "--clear-groups"]
    probe = stack.viewer_exec(
        "setpriv", *identity, "--", "python3", "-c", ATTACK, viewer, f"{stack.name}-import-runner", sentinel, IMAGE
    )
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)
    assert result["same_creds"] is True and result["creds"]["Uid"][0] == "10001", result["creds"]
    assert result["creds"]["CapEff"] == ["0000000000000000"]
    assert result["engine_socket"] == "PermissionError"
    assert result["engine_socket_via_proc"] == ["PermissionError"]
    refused = (
        "create",
        "create_unversioned",
        "list",
        "start_viewer",
        "start_sentinel",
        "start_encoded",
        "start_old_api_with_host_config",
        "exec",
        "update",
        "images",
        "volumes",
        "remove_sentinel",
        "remove_runner_forced",
        "remove_runner_with_volumes",
        "sdk_create",
    )
    assert {name: result[name] for name in refused} == dict.fromkeys(refused, 403)
    assert (result["ping"], result["inspect_runner"]) == (200, 200)  # the filter itself answers
    assert container_state(sentinel)["Status"] == "created"  # never started
