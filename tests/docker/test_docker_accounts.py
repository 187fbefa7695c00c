"""Several accounts under Docker, through the page's API: two accounts' imports and two accounts' scans side by
side in the stack's runner pools, each held mid-run while the other account's run goes start to end, each exact;
then settings changed from the page (an import runner runs `gmail-stats account`).

One stack with the fake Google in a container serving two mailboxes; it writes each account's token cache into the
secrets folder when it starts, so the scans need no consent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import (
    chown_to_ingester,
    docker,
    ensure_image,
    launch_once_port_is_free,
    wait_for,
    wait_until_host_port_free,
)
from tests.docker.stack import Stack
from tests.support.factories import generate_messages, write_mbox
from tests.support.net import free_port

pytestmark = pytest.mark.docker

# As in test_docker_stack, plus a second mailbox (account `work`) and both accounts' token caches in /secrets.
FAKE_GOOGLE = """
import json, os
from tests.fakes.google import FakeGoogle
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.mailbox import Mailbox

class Server(FakeGoogleServer):
    def server_bind(self):
        self.server_address = ("0.0.0.0", self.server_address[1])
        super().server_bind()

google = FakeGoogle(Mailbox.generate(DEFAULT_COUNT, seed=DEFAULT_SEED), quota_units_per_sec=None)
google.add_mailbox("work", Mailbox.generate(WORK_COUNT, seed=WORK_SEED, senders=60), address="work@example.com")
server = Server(google, port=8080)
google.base_url = "http://fake-google:8080/"
for box, name in (("", "tokencache.json"), ("work", "tokencache.work.json")):
    fd = os.open(f"/secrets/.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(google.authorized_user_info(box), handle)
    os.replace(f"/secrets/.{name}", f"/secrets/{name}")
print("fake Google up", flush=True)
server.serve_forever(poll_interval=0.1)
"""
DEFAULT_COUNT, DEFAULT_SEED = 300, 11
WORK_COUNT, WORK_SEED = 200, 23


@pytest.fixture
def accounts_stack(tmp_path: Path) -> Iterator[tuple[Stack, int]]:
    """The stack, and the host port of the fake's consent page (for the test's "browser")."""
    wait_until_host_port_free(8765, why="the first scan runner publishes the consent callback there")
    ensure_image()
    made = Stack(tmp_path)
    fake_port = free_port()
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    from tests.fakes.google import FakeGoogle
    from tests.fakes.mailbox import Mailbox

    google = FakeGoogle(Mailbox.generate(1, seed=1))
    google.base_url = "http://fake-google:8080/"
    (secrets_dir / "credentials.json").write_text(json.dumps(google.client_config()))
    chown_to_ingester(secrets_dir)  # the fake writes the token caches there, the scans refresh them
    script = FAKE_GOOGLE
    for name, value in (("DEFAULT_COUNT", DEFAULT_COUNT), ("DEFAULT_SEED", DEFAULT_SEED)):
        script = script.replace(name, str(value))
    script = script.replace("WORK_COUNT", str(WORK_COUNT)).replace("WORK_SEED", str(WORK_SEED))
    override = tmp_path / "compose.fake-google.yaml"
    viewer_env = {
        "GMAIL_STATS_API_ENDPOINT": "http://fake-google:8080/",
        "OAUTHLIB_INSECURE_TRANSPORT": "1",
        # Paced below Gmail's 250 units/s, so a scan is still mid-run when the test holds it.
        "GMAIL_STATS_QUOTA_UNITS_PER_SEC": "150",
    }
    fake = {
        "image": "${GMAIL_STATS_IMAGE:-gmail-stats:local}",
        "entrypoint": ["python3", "-c", script.replace("$", "$$")],
        "volumes": [f"{REPO_ROOT / 'tests'}:/app/tests:ro", f"{secrets_dir}:/secrets"],
        "ports": [f"127.0.0.1:{fake_port}:8080"],
        "read_only": True,
        "cap_drop": ["ALL"],
        "init": True,
    }
    override.write_text(json.dumps({"services": {"viewer": {"environment": viewer_env}, "fake-google": fake}}))
    made.env["COMPOSE_FILE"] = f"{REPO_ROOT / 'compose.yaml'}:{override}"
    made.env["COMPOSE_PROJECT_DIRECTORY"] = str(REPO_ROOT)
    try:
        made.up()
        wait_for(
            lambda: (secrets_dir / "tokencache.work.json").exists(), timeout=60, what="the fake wrote the token caches"
        )
        yield made, fake_port
    finally:
        made.down()


def run_of(stack: Stack, account: str, run_id: int) -> dict[str, Any]:
    (run,) = [r for r in stack.get(f"/api/runs?account={account}")["runs"] if r["run_id"] == run_id]
    return dict(run)


def wait_run(stack: Stack, account: str, run_id: int, *states: str, timeout: float = 180) -> dict[str, Any]:
    wait_for(
        lambda: run_of(stack, account, run_id)["state"] in states,
        timeout=timeout,
        what=f"account {account}'s run {run_id} in {states}",
    )
    return run_of(stack, account, run_id)


def launch(stack: Stack, account: str, body: dict[str, Any]) -> int:
    response = launch_once_port_is_free(lambda: stack.post(f"/api/runs?account={account}", body))
    assert response.status_code == 202, response.text
    run_id: int = response.json()["run_id"]
    return run_id


@contextmanager
def frozen(container: str) -> Iterator[None]:
    """The cgroup freezer on a runner mid-run: it keeps its account's lock and its run stays `running`, however
    long the test takes (nothing here throttles it)."""
    docker("pause", container)
    try:
        yield
    finally:
        docker("unpause", container, check=False)


def exported(stack: Stack, account: str) -> dict[str, int]:
    result = stack.compose("run", "--rm", "ingester", "export", "--account", account)
    assert result.returncode == 0, result.stderr
    return {row["sender"]: row["mails_sent"] for row in json.loads(result.stdout)["senders"]}


def test_two_accounts_import_and_scan_side_by_side_then_change_settings_from_the_page(
    accounts_stack: tuple[Stack, int],
) -> None:
    from tests.fakes.mailbox import Mailbox

    stack, _ = accounts_stack
    runner = f"{stack.name}-{{}}-runner"
    # Imports: account `old`'s big file held mid-run in the first import runner while `archive`'s goes start to end.
    old_expected = write_mbox(stack.imports / "old.mbox", generate_messages(count=12000, body_bytes=1500, senders=300))
    archive_expected = write_mbox(stack.imports / "archive.mbox", generate_messages(count=700, body_bytes=300))
    old_run = launch(stack, "old", {"source": "mbox", "path": "old.mbox"})
    with frozen(runner.format("import")):
        assert run_of(stack, "old", old_run)["state"] == "running"
        archive_run = launch(stack, "archive", {"source": "mbox", "path": "archive.mbox"})
        archive = wait_run(stack, "archive", archive_run, "done", "failed")
        assert run_of(stack, "old", old_run)["state"] == "running"  # the two accounts' runs overlapped
        assert docker("inspect", "--format", "{{.State.Paused}}", runner.format("import")).stdout.strip() == "true"
    assert (archive["state"], archive["messages_new"]) == ("done", sum(archive_expected.values()))
    old = wait_run(stack, "old", old_run, "done", "failed")
    assert (old["state"], old["outcome"], old["messages_new"]) == ("done", "complete", sum(old_expected.values()))

    # Scans: the default account's held mid-run in the first scan runner while `work`'s goes start to end.
    default_run = launch(stack, "default", {"source": "gmail_api"})
    with frozen(runner.format("scan")):
        assert run_of(stack, "default", default_run)["state"] == "running"
        work_run = launch(stack, "work", {"source": "gmail_api"})
        work = wait_run(stack, "work", work_run, "done", "failed")
        assert run_of(stack, "default", default_run)["state"] == "running"
    default_scan = wait_run(stack, "default", default_run, "done", "failed")
    default_counts = Mailbox.generate(DEFAULT_COUNT, seed=DEFAULT_SEED).expected_counts()
    work_counts = Mailbox.generate(WORK_COUNT, seed=WORK_SEED, senders=60).expected_counts()
    assert (work["state"], work["messages_new"]) == ("done", sum(work_counts.values())), work
    assert (default_scan["state"], default_scan["messages_new"]) == ("done", sum(default_counts.values()))

    # Each account exactly its own mail.
    assert exported(stack, "old") == old_expected
    assert exported(stack, "archive") == archive_expected
    assert exported(stack, "default") == default_counts
    assert exported(stack, "work") == work_counts
    accounts = {a["name"]: a for a in stack.get("/api/accounts")["accounts"]}
    assert (accounts["work"]["gmail_address"], accounts["default"]["gmail_address"]) == (
        "work@example.com",
        "someone@example.com",
    )

    # Settings from the page: an import runner runs `gmail-stats account` (before #24: refused under Docker).
    changed = stack.post("/api/account/settings?account=work", {"refresh": "hourly"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["refresh"] == "hourly"
    named = stack.post("/api/account/settings?account=old", {"address": "Old.Me@gmail.com"})
    assert named.status_code == 200, named.text
    assert named.json()["gmail_address"] == "old.me@gmail.com"
    accounts = {a["name"]: a for a in stack.get("/api/accounts")["accounts"]}
    assert (accounts["work"]["refresh"], accounts["old"]["gmail_address"]) == ("hourly", "old.me@gmail.com")
    assert sorted(accounts) == ["archive", "default", "old", "work"]


def test_a_second_accounts_consent_completes_by_paste_while_the_first_scan_runner_holds_the_port(
    accounts_stack: tuple[Stack, int],
) -> None:
    """Account `fresh` has no token: its scan waits for consent in the second scan runner, which publishes no port
    (the default account's scan holds the first, frozen); the address the browser ended on, pasted on the page,
    reaches that runner on the stack network."""
    import httpx

    from tests.fakes.mailbox import Mailbox

    stack, fake_port = accounts_stack
    default_run = launch(stack, "default", {"source": "gmail_api"})
    with frozen(f"{stack.name}-scan-runner"):
        fresh_run = launch(stack, "fresh", {"source": "gmail_api"})
        wait_for(
            lambda: (
                run_of(stack, "fresh", fresh_run)["state"] == "awaiting_auth"
                and run_of(stack, "fresh", fresh_run)["auth_url"]
            ),
            timeout=60,
            what="account fresh's consent URL on its run row",
        )
        consent_url = str(run_of(stack, "fresh", fresh_run)["auth_url"])
        fake = f"http://127.0.0.1:{fake_port}/"
        with httpx.Client(timeout=30) as browser:
            page = browser.get(consent_url.replace("http://fake-google:8080/", fake), follow_redirects=False)
        address = page.headers["location"]
        assert address.startswith("http://127.0.0.1:8765/?")  # the host's port: the frozen first runner's
        pasted = stack.post(f"/api/runs/{fresh_run}/consent?account=fresh", {"address": address})
        assert (pasted.status_code, pasted.json()) == (202, {"run_id": fresh_run}), pasted.text
        fresh = wait_run(stack, "fresh", fresh_run, "done", "failed")
        assert run_of(stack, "default", default_run)["state"] == "running"
    expected = Mailbox.generate(DEFAULT_COUNT, seed=DEFAULT_SEED).expected_counts()  # consent grants the first box
    assert (fresh["state"], fresh["messages_new"]) == ("done", sum(expected.values())), fresh
    assert wait_run(stack, "default", default_run, "done", "failed")["state"] == "done"
    assert exported(stack, "fresh") == expected
