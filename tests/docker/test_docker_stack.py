"""The whole compose stack end to end, through the published port and the engine: onboarding, a read-only viewer,
UI imports in launched containers, the lock against `make import`, Cancel/Resume, and a viewer restarted mid-run.

Each test brings up a project of its own (its own volume, folders and a free loopback port) and takes it down.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import (
    IMAGE,
    chown_to_ingester,
    compose_env,
    container_state,
    docker,
    ensure_image,
    launch_once_port_is_free,
    paused,
    remove_containers,
    throttle,
    wait_for,
    wait_until_host_port_free,
)
from tests.support.factories import generate_messages, write_mbox
from tests.support.net import free_port
from viewer.launch.container_spec import STACK_LABEL

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not (REPO_ROOT / "viewer" / "app.py").exists(), reason="the viewer (issue 4) is not merged"),
]


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


def _running(made: Stack) -> Iterator[Stack]:
    try:
        made.up()
        yield made
    finally:
        made.down()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    ensure_image()
    yield from _running(Stack(tmp_path))


@pytest.fixture
def default_stack(tmp_path: Path) -> Iterator[Stack]:
    ensure_image()
    yield from _running(Stack(tmp_path, default_folders=True))


def big_mbox(stack: Stack, name: str = "big.mbox") -> tuple[Path, int]:
    path = stack.imports / name
    expected = write_mbox(path, generate_messages(count=12000, body_bytes=1500, senders=300))
    return path, sum(expected.values())


def start_throttled_import(stack: Stack, path: str) -> int:
    response = stack.post("/api/runs", {"source": "mbox", "path": path})
    assert response.status_code == 202, response.text
    run_id: int = response.json()["run_id"]
    (container,) = stack.ingesters(running=True)
    throttle(container, cpus="0.03")
    return run_id


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


def test_ui_import_runs_in_a_new_container_and_the_counts_match(stack: Stack) -> None:
    expected = write_mbox(
        stack.imports / "Takeout mail.mbox", generate_messages(count=800, body_bytes=300, spam_every=9)
    )
    response = stack.post("/api/runs", {"source": "mbox", "path": "Takeout mail.mbox"})
    assert response.status_code == 202, response.text
    run = stack.wait_run(response.json()["run_id"], "done", "failed")
    assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", sum(expected.values()))
    assert not stack.secrets.exists()  # the import needed no secrets folder (the `ingester` service below does)
    exported = stack.compose("run", "--rm", "ingester", "export")
    assert {row["sender"]: row["mails_sent"] for row in json.loads(exported.stdout)["senders"]} == expected
    # The viewer deletes the spent request once it has seen the runner stop.
    wait_for(lambda: stack.status() and not stack.request_pending(), timeout=60, what="spent request deleted")


def test_make_import_is_refused_while_a_ui_import_runs_then_cancel_and_resume(stack: Stack) -> None:
    path, total = big_mbox(stack)
    run_id = start_throttled_import(stack, "big.mbox")
    stack.wait_run(run_id, "running")
    runner = f"{stack.name}-import-runner"
    with paused(runner):  # mid-run, holding the lock, for as long as this takes on any machine
        refused = stack.make_import(path)
        assert refused.returncode != 0 and "Error 75" in refused.stderr, refused.stderr
        assert "another ingester is already running" in refused.stderr
        assert stack.post("/api/runs", {"source": "mbox", "path": "big.mbox"}).json()["error"] == "run_active"
        cancelled_at = time.monotonic()
        assert stack.post(f"/api/runs/{run_id}/cancel", {}).status_code == 202
    run = stack.wait_run(run_id, "cancelled", "abandoned", "done", timeout=20)
    assert run["state"] == "cancelled" and time.monotonic() - cancelled_at < 12  # SIGTERM honoured, not SIGKILL
    wait_for(lambda: not stack.status()["ingest_lock_held"], timeout=30, what="cancelled ingester exits")
    resumed = stack.post("/api/runs", {"source": "mbox", "resume_run_id": run_id})
    assert resumed.status_code == 202, resumed.text
    assert resumed.json()["run_id"] == run_id
    final = stack.wait_run(run_id, "done", "failed")
    assert (final["outcome"], final["messages_new"], final["messages_seen"]) == ("complete", total, total)
    assert len(stack.get("/api/runs")["runs"]) == 1  # the refused ingester left no run behind
    wait_for(lambda: stack.status() and not stack.ingesters(running=True), timeout=60, what="runner stopped")


def test_page_import_cancel_and_resume_with_the_default_import_folder(default_stack: Stack) -> None:
    stack = default_stack
    _, total = big_mbox(stack)
    run_id = start_throttled_import(stack, "big.mbox")
    stack.wait_run(run_id, "running")
    with paused(f"{stack.name}-import-runner"):
        assert stack.post(f"/api/runs/{run_id}/cancel", {}).status_code == 202
    assert stack.wait_run(run_id, "cancelled", "done", timeout=20)["state"] == "cancelled"
    wait_for(lambda: not stack.status()["ingest_lock_held"], timeout=30, what="cancelled ingester exits")
    assert stack.run(run_id)["mbox_path"] == "big.mbox"  # the host's ./imports/big.mbox, inside the folder
    resumed = stack.post("/api/runs", {"source": "mbox", "resume_run_id": run_id})
    assert resumed.status_code == 202, resumed.text
    final = stack.wait_run(run_id, "done", "failed")
    assert (final["outcome"], final["messages_new"], final["messages_seen"]) == ("complete", total, total)


def test_compose_down_volumes_deletes_the_database_and_every_container_of_the_stack(stack: Stack) -> None:
    write_mbox(stack.imports / "a.mbox", generate_messages(count=50, body_bytes=100))
    run_id = stack.post("/api/runs", {"source": "mbox", "path": "a.mbox"}).json()["run_id"]
    assert stack.wait_run(run_id, "done", "failed")["state"] == "done"
    wait_for(lambda: not stack.ingesters(running=True), timeout=60, what="runner stopped")
    down = stack.compose("down", "--volumes")
    assert down.returncode == 0 and "in use" not in down.stderr, down.stderr
    project = docker("ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={stack.name}")
    assert (stack.ingesters(), project.stdout.split()) == ([], [])
    assert docker("volume", "inspect", f"{stack.name}-data", check=False).returncode != 0
    stack.up()  # a new stack on a new volume: onboarding
    assert (stack.status()["db"], stack.get("/api/runs")["runs"]) == ("missing", [])


def test_a_viewer_restarted_mid_run_owns_the_run_again(stack: Stack) -> None:
    big_mbox(stack)
    run_id = start_throttled_import(stack, "big.mbox")
    stack.wait_run(run_id, "running")
    assert stack.status()["owns_active_run"] is True
    with paused(f"{stack.name}-import-runner"):  # still mid-run when the new viewer looks, on any machine
        restarted = stack.compose("restart", "viewer")
        assert restarted.returncode == 0, restarted.stderr
        stack.up()  # waits for the healthcheck again
        status = stack.status()
        assert (status["active_run"]["run_id"], status["owns_active_run"]) == (run_id, True)
        assert stack.http.get(f"/api/runs/{run_id}/log").status_code == 200
        assert stack.post(f"/api/runs/{run_id}/cancel", {}).status_code == 202
    assert stack.wait_run(run_id, "cancelled", "abandoned", timeout=20)["state"] == "cancelled"
    wait_for(lambda: stack.status() and not stack.ingesters(running=True), timeout=60, what="runner stopped")


# The fake Google runs in a container on the stack's network (the repo's tests mounted read-only), listening on all
# of that container's interfaces and naming itself `fake-google`, the address the launched scan container uses.
FAKE_GOOGLE = """
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox

class Server(FakeGoogleServer):
    def server_bind(self):
        self.server_address = ("0.0.0.0", self.server_address[1])
        super().server_bind()

google = FakeGoogle(Mailbox.generate(COUNT, seed=SEED), quota_units_per_sec=None)
server = Server(google, port=8080)
google.base_url = "http://fake-google:8080/"
print("fake Google up", flush=True)
server.serve_forever(poll_interval=0.1)
"""
FAKE_MESSAGES = 300
FAKE_SEED = 11
OAUTH_PORT = 8765


@pytest.fixture
def scan_stack(tmp_path: Path) -> Iterator[tuple[Stack, int]]:
    from tests.fakes.google import FakeGoogle
    from tests.fakes.mailbox import Mailbox

    wait_until_host_port_free(OAUTH_PORT, why="the consent callback of a UI scan is published there")
    ensure_image()
    made = Stack(tmp_path)
    fake_port = free_port()
    google = FakeGoogle(Mailbox.generate(FAKE_MESSAGES, seed=FAKE_SEED))
    google.base_url = "http://fake-google:8080/"
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "credentials.json").write_text(json.dumps(google.client_config()))
    chown_to_ingester(secrets_dir)  # the ingester writes its token cache there
    override = tmp_path / "compose.fake-google.yaml"
    script = FAKE_GOOGLE.replace("COUNT", str(FAKE_MESSAGES)).replace("SEED", str(FAKE_SEED))
    override.write_text(
        json.dumps(
            {
                "services": {
                    "viewer": {
                        "environment": {
                            "GMAIL_STATS_API_ENDPOINT": "http://fake-google:8080/",
                            "OAUTHLIB_INSECURE_TRANSPORT": "1",
                        }
                    },
                    "fake-google": {
                        "image": "${GMAIL_STATS_IMAGE:-gmail-stats:local}",
                        "entrypoint": ["python3", "-c", script.replace("$", "$$")],
                        "volumes": [f"{REPO_ROOT / 'tests'}:/app/tests:ro"],
                        "ports": [f"127.0.0.1:{fake_port}:8080"],
                        "read_only": True,
                        "cap_drop": ["ALL"],
                        "init": True,  # Python as PID 1 would ignore the SIGTERM of `down`
                    },
                }
            }
        )
    )
    made.env["COMPOSE_FILE"] = f"{REPO_ROOT / 'compose.yaml'}:{override}"
    made.env["COMPOSE_PROJECT_DIRECTORY"] = str(REPO_ROOT)
    try:
        made.up()
        yield made, fake_port
    finally:
        made.down()


@pytest.mark.parametrize("answer", ["redirect", "paste"])
def test_ui_scan_against_fake_google_with_the_consent_round_trip(scan_stack: tuple[Stack, int], answer: str) -> None:
    """`paste`: the browser is on another machine, so the redirect address is pasted on the page, and the viewer
    hands it to the scan runner's listener by its container name on the stack network."""
    from tests.fakes.mailbox import Mailbox

    stack, fake_port = scan_stack

    # The previous case's runner published 127.0.0.1:8765 too.
    response = launch_once_port_is_free(lambda: stack.post("/api/runs", {"source": "gmail_api"}))
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    wait_for(
        lambda: stack.run(run_id)["state"] == "awaiting_auth" and stack.run(run_id)["auth_url"],
        timeout=60,
        what="the consent URL on the run row",
    )
    consent_url = str(stack.run(run_id)["auth_url"])
    assert consent_url.startswith("http://fake-google:8080/o/oauth2/auth?")
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2F" in consent_url
    # The browser: Google's consent page (published for the test), then the redirect to the scan's callback port.
    with httpx.Client(timeout=30) as browser:
        page = browser.get(
            consent_url.replace("http://fake-google:8080/", f"http://127.0.0.1:{fake_port}/"),
            follow_redirects=answer == "redirect",
        )
    if answer == "redirect":
        assert page.status_code == 200 and b"close this tab" in page.content
    else:
        address = page.headers["location"]
        forged = stack.post(f"/api/runs/{run_id}/consent", {"address": address.replace("state=", "state=x")})
        assert (forged.status_code, forged.json()["error"]) == (422, "bad_request"), forged.text
        assert stack.run(run_id)["state"] == "awaiting_auth"
        pasted = stack.post(f"/api/runs/{run_id}/consent", {"address": address})
        assert (pasted.status_code, pasted.json()) == (202, {"run_id": run_id}), pasted.text
    run = stack.wait_run(run_id, "done", "failed")
    expected = Mailbox.generate(FAKE_MESSAGES, seed=FAKE_SEED).expected_counts()
    assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", sum(expected.values()))
    exported = stack.compose("run", "--rm", "ingester", "export")
    assert {row["sender"]: row["mails_sent"] for row in json.loads(exported.stdout)["senders"]} == expected
    wait_for(lambda: stack.status() and not stack.request_pending(), timeout=60, what="spent scan request deleted")


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
