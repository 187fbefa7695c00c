"""The whole compose stack end to end, through the published port and the engine: UI imports in launched
containers, the lock against `make import`, Cancel/Resume, `down --volumes`, a viewer restarted mid-run, and a UI
scan against the fake Google with its consent round trip.

Each test brings up a project of its own (tests/docker/stack.py) and takes it down; the viewer's confinement is
tested in test_docker_confinement.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import (
    chown_to_ingester,
    docker,
    ensure_image,
    launch_once_port_is_free,
    paused,
    wait_for,
    wait_until_host_port_free,
)
from tests.docker.stack import Stack, big_mbox, running, start_throttled_import
from tests.support.factories import generate_messages, write_mbox
from tests.support.net import free_port

pytestmark = [
    pytest.mark.docker,
]


@pytest.fixture
def default_stack(tmp_path: Path) -> Iterator[Stack]:
    ensure_image()
    yield from running(Stack(tmp_path, default_folders=True))


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
