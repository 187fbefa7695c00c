"""The README's Docker quick start, verbatim, as a non-root host user in a fresh copy of the repository: `make up`,
an import started from the page, `make scan` through Google's consent (the fake Google, reached through the
published callback port as a browser would), Ctrl-C at the terminal, `make scan RESUME=N` as printed (interrupted
once more by SIGINT, as a script would), and exact counts at the end. Nobody runs sudo or chown.

The copy's `.env` (the file `.env.example` says to write) names a project, port, volume and image of the test's
own, and adds `compose.fake-google.yaml`, which points the ingester at the fake Google on the host.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import (
    IMAGE,
    INGESTER_UID,
    docker,
    ensure_image,
    python_image,
    remove_containers,
    wait_for,
    wait_until_host_port_free,
)
from tests.docker.hostuser import HostUser, Session, fresh_copy, host_user
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox
from tests.support.factories import generate_messages, write_mbox
from tests.support.net import free_port
from viewer.launch.container_spec import STACK_LABEL

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

MBOX_NAME = "All mail Including Spam and Trash.mbox"
GMAIL_MESSAGES = 1500
OAUTH_PORT = 8765


def readme_docker_start() -> str:
    """The shell block under "With Docker" in the README, exactly as a reader copies it."""
    after = (REPO_ROOT / "README.md").read_text().split("With Docker", 1)[1]
    block = after.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "make up" in block, block
    return block


class HostGoogle(FakeGoogleServer):
    """The fake Google on the host, listening on the address the stack's containers reach the host at."""

    def __init__(self, google: FakeGoogle, *, address: str) -> None:
        self._address = address
        super().__init__(google)
        google.base_url = f"http://{address}:{self.server_address[1]}/"

    def server_bind(self) -> None:
        self.server_address = (self._address, self.server_address[1])
        super().server_bind()


@dataclass
class QuickStart:
    user: HostUser
    repo: Path
    project: str
    port: int
    mbox_counts: dict[str, int]
    sessions: list[Session] = field(default_factory=list)

    def run(self, *command: str, tty: bool = False) -> Session:
        session = Session(self.user.argv(*command), cwd=self.repo, env=self.user.env(), tty=tty)
        self.sessions.append(session)  # closed by the fixture, even when a test fails before waiting on it
        return session

    def shell(self, script: str, timeout: float = 300) -> str:
        session = self.run("sh", "-ec", script)
        code = session.wait(timeout)
        assert code == 0, session.output()[-3000:]
        return session.output()

    @property
    def http(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    def get(self, path: str) -> Any:
        with self.http as client:
            for _ in range(60):  # `503 busy` while the ingester checkpoints: the page asks again, so do we
                response = client.get(path)
                if response.status_code != 503:
                    break
                time.sleep(0.3)
        assert response.status_code == 200, response.text
        return response.json()

    def start_from_page(self, body: dict[str, Any]) -> int:
        """What the page's Import or Scan button sends (with its CSRF token); returns the new run's id."""
        with self.http as page:
            token = page.get("/api/status").json()["csrf_token"]
            answer = page.post("/api/runs", json=body, headers={"X-Gmail-Stats-Csrf": token})
        assert answer.status_code == 202, answer.text
        run_id: int = answer.json()["run_id"]
        return run_id

    def run_row(self, run_id: int) -> dict[str, Any]:
        (row,) = [r for r in self.get("/api/runs")["runs"] if r["run_id"] == run_id]
        return dict(row)

    def scan_row(self) -> dict[str, Any] | None:
        rows = [r for r in self.get("/api/runs")["runs"] if r["source"] == "gmail_api"]
        return dict(max(rows, key=lambda r: int(r["run_id"]))) if rows else None

    def senders(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        while True:
            page = self.get(f"/api/senders?limit=500&offset={len(counts)}")
            counts |= {row["sender"]: row["mails_sent"] for row in page["senders"]}
            if len(counts) >= page["total"]:
                return counts


@pytest.fixture
def quickstart() -> Iterator[QuickStart]:
    ensure_image()
    wait_until_host_port_free(OAUTH_PORT, why="`make scan` publishes its consent callback there")
    with host_user() as user, tempfile.TemporaryDirectory(prefix="gmstest-clone-", dir="/tmp") as where:
        Path(where).chmod(0o755)
        repo = fresh_copy(user, into=Path(where) / "gmail-stats")
        project = f"gmstest-qs-{os.getpid()}"
        port = free_port()
        settings = {
            "COMPOSE_PROJECT_NAME": project,
            "GMAIL_STATS_VOLUME": f"{project}-data",
            "GMAIL_STATS_PUBLISHED_PORT": str(port),
            "GMAIL_STATS_IMAGE": IMAGE,
            "PYTHON_IMAGE": python_image(),
            "COMPOSE_FILE": "compose.yaml:compose.fake-google.yaml",
        }
        (repo / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (repo / "compose.fake-google.yaml").write_text("{}")  # filled in once the stack is up (the fake's address)
        takeout = user.home / "Downloads" / "Takeout" / "Mail"
        takeout.mkdir(parents=True)
        counts = write_mbox(takeout / MBOX_NAME, generate_messages(count=600, body_bytes=300, spam_every=9))
        user.own(repo)
        user.own(user.home)
        made = QuickStart(user=user, repo=repo, project=project, port=port, mbox_counts=counts)
        try:
            yield made
        finally:
            for session in made.sessions:
                session.close()
            made.run("make", "down").wait(120)
            remove_containers(f"{STACK_LABEL}={project}")
            subprocess.run(
                ["docker", "compose", "--profile", "ingester", "down", "--volumes", "--remove-orphans"],
                cwd=repo,
                capture_output=True,
                timeout=120,
                check=False,
            )
            docker("volume", "rm", "--force", f"{project}-data", check=False)


def ingester_containers() -> str:
    """What `make scan`'s containers are doing, for a failure message: their state, processes and last logs."""
    lines = []
    listed = docker("ps", "--all", "--filter", "name=gmail-stats-ingester-", "--format", "{{.Names}}", check=False)
    for name in listed.stdout.split():
        state = docker("inspect", "--format", "{{.State.Status}} pid={{.State.Pid}}", name, check=False).stdout
        top = docker("top", name, check=False).stdout
        logs = docker("logs", "--tail", "20", name, check=False)
        lines += [f"{name}: {state.strip()}", top, logs.stdout[-1500:], logs.stderr[-1500:]]
    return "\n".join(lines) or "no make-scan container"


def point_the_ingester_at(google: FakeGoogle, repo: Path, user: HostUser) -> None:
    override = {
        "services": {
            "ingester": {
                "environment": {"GMAIL_STATS_API_ENDPOINT": google.base_url, "OAUTHLIB_INSECURE_TRANSPORT": "1"}
            }
        }
    }
    (repo / "compose.fake-google.yaml").write_text(json.dumps(override))
    downloads = user.home / "Downloads" / "client_secret_fake.apps.googleusercontent.com.json"
    downloads.write_text(json.dumps(google.client_config()))
    user.own(downloads)  # not the repository: `make secrets` gave secrets/ away and it must stay so


def test_the_readme_quick_start_as_a_non_root_user(quickstart: QuickStart) -> None:
    qs, started = quickstart, time.monotonic()
    shown = qs.shell(readme_docker_start())
    assert f"gmail-stats viewer: http://127.0.0.1:{qs.port}\n" in shown
    secrets = (qs.repo / "secrets").stat()  # handed to the containers' user, the host user's group keeps access
    assert (secrets.st_uid, secrets.st_gid, stat.S_IMODE(secrets.st_mode)) == (INGESTER_UID, qs.user.gid, 0o2770)

    # The page: the onboarding import card lists the copied file, with the host's command beside it.
    imports = qs.get("/api/imports")
    assert [(f["path"], f["command"]) for f in imports["files"]] == [
        (MBOX_NAME, f"make import MBOX='./imports/{MBOX_NAME}'")
    ]
    assert imports["scan_command"] == "make scan"
    import_id = qs.start_from_page({"source": "mbox", "path": MBOX_NAME})
    wait_for(lambda: qs.run_row(import_id)["state"] == "done", timeout=120, what="the page's import", interval=0.3)
    assert qs.senders() == qs.mbox_counts

    # `make scan`: credentials.json saved into secrets/ (the README's words), consent in the "browser".
    network = json.loads(docker("network", "inspect", f"{qs.project}_default").stdout)[0]
    mailbox = Mailbox.generate(GMAIL_MESSAGES, seed=5)
    google = FakeGoogle(mailbox)
    # Each interruption below happens while the fake holds a batch unanswered: mid-scan on any machine.
    google.faults.gate.hold_after(1)
    server = HostGoogle(google, address=network["IPAM"]["Config"][0]["Gateway"]).start()
    try:
        point_the_ingester_at(google, qs.repo, qs.user)
        # Forgot the client file: the error names it where the user must put it, on the host.
        forgot = qs.run("make", "scan")
        assert forgot.wait(120) != 0
        assert "no OAuth client file at ./secrets/credentials.json: " in forgot.output(), forgot.output()[-2000:]
        assert "download its JSON as ./secrets/credentials.json" in forgot.output()
        qs.shell("cp ~/Downloads/client_secret_*.json secrets/credentials.json")
        terminal = qs.run("make", "scan", tty=True)
        consent_url = terminal.expect(r"(http://\S+/o/oauth2/auth\?\S+)", timeout=120).group(1)
        assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2F" in consent_url
        with httpx.Client(timeout=30) as browser:
            answer = browser.get(consent_url, follow_redirects=True)
        assert answer.status_code == 200 and b"close this tab" in answer.content
        wait_for(
            lambda: (qs.scan_row() or {}).get("messages_new", 0) > 0, timeout=60, what="scanned messages", interval=0.3
        )
        wait_for(google.faults.gate.holding, timeout=60, what="a batch held mid-scan")
        terminal.ctrl_c()  # a keystroke: compose gave the container the terminal
        terminal.expect(r"cancelling: finishing the work in flight", timeout=60)  # heard; now let the batch go
        google.faults.gate.release()
        hint = terminal.expect(r"cancelled; resume with: (make scan RESUME=(\d+))\n", timeout=60)
        assert terminal.wait(60) == 0, terminal.output()[-2000:]
        scan_id = int(hint.group(2))
        assert qs.run_row(scan_id)["state"] == "cancelled"

        # The printed command, from a script this time: SIGINT to its process group, not a keystroke.
        first = qs.run_row(scan_id)["messages_new"]
        google.faults.gate.hold_after(1)
        script = qs.run("sh", "-c", hint.group(1))
        wait_for(
            lambda: qs.run_row(scan_id)["messages_new"] > first,
            timeout=60,
            what="the resumed scan's progress",
            interval=0.3,
        )
        wait_for(google.faults.gate.holding, timeout=60, what="a batch held mid-resume")
        script.ctrl_c()
        try:
            script.expect(r"cancelling: finishing the work in flight", timeout=60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{ingester_containers()}") from None
        google.faults.gate.release()
        script.expect(rf"cancelled; resume with: make scan RESUME={scan_id}\n", timeout=60)
        script.wait(60)
        assert qs.run_row(scan_id)["state"] == "cancelled"
        leftovers = docker("ps", "--quiet", "--filter", "name=gmail-stats-ingester-").stdout.split()
        assert leftovers == []  # the interrupted container stopped and was removed

        finish = qs.run("sh", "-c", hint.group(1))
        assert finish.wait(120) == 0, finish.output()[-2000:]
    finally:
        server.close()
    final = qs.run_row(scan_id)
    expected_gmail = mailbox.expected_counts()
    assert (final["state"], final["outcome"], final["messages_new"]) == (
        "done",
        "complete",
        sum(expected_gmail.values()),
    )
    assert qs.senders() == dict(Counter(qs.mbox_counts) + Counter(expected_gmail))
    assert len(google.auth_requests) == 1  # consent once: the resumes used the token cache in ./secrets
    assert "oauth2/auth" not in script.output() + finish.output()
    assert (qs.repo / "secrets" / "tokencache.json").stat().st_uid == INGESTER_UID
    print(f"quick start end to end: {time.monotonic() - started:.0f} s")  # noqa: T201 - the run time, for -s
