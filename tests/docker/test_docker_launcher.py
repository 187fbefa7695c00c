"""`DockerLauncher` against the real engine: runs in a stack's import runner with exact counts, an account's own
database, the scan runners and the OAuth callback port, a refused path, spent requests and a missing image.

Each test provisions runners of its own (tests/docker/stack.py's `RunnerStack`). The launcher talks to the engine
directly here (test_docker_confinement.py tests the API filter in front of it); stopping runs is in
test_docker_stops.py.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from shared.launch_request import LaunchCommand, LaunchRequest
from tests.docker.dockerenv import (
    container_state,
    docker,
    ensure_image,
    paused,
    wait_for,
    wait_until_host_port_free,
    writable_dir,
)
from tests.docker.stack import RunnerStack, import_request
from tests.support.factories import GeneratedMessage
from tests.support.importing import counts_of, query
from tests.support.polling import wait_stopped
from viewer.launch.container_spec import STACK_LABEL, DockerStack
from viewer.launch.launch_docker import connect, provision_runners
from viewer.launch.launcher import Launched, LaunchError
from viewer.launch.runner_launcher import DockerLauncher

pytestmark = pytest.mark.docker


def test_import_runs_in_the_runner_with_exact_counts_and_its_request_is_then_spent(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = runner_stack.write("Takeout file.mbox", mbox_messages)
    runners = runner_stack.provision(GMAIL_STATS_PARSE_WORKERS="1")
    assert (runners.imports[0], runners.scans) == (f"{runner_stack.name}-import-runner", ())  # no secrets folder
    launcher = runner_stack.launcher(runners)
    launched = launcher.launch(import_request(import_path="Takeout file.mbox"))
    run = runner_stack.wait_state(launched, "done", "failed", "cancelled")
    assert (run.state, run.outcome, run.messages_new) == ("done", "complete", sum(expected.values()))
    assert run.mbox_path == f"{runner_stack.imports}/Takeout file.mbox"  # the host's path, not the runner's /imports
    assert counts_of(runner_stack.db) == expected
    wait_stopped(launcher, launched, timeout=30)
    assert container_state(runners.imports[0])["ExitCode"] == 0
    assert launcher.log_tail(launched) == []  # `--quiet`: nothing went wrong
    launcher.reap()
    assert not (runner_stack.requests / "import.json").exists()
    # Started by anyone but the launcher, the runner finds no request and runs nothing.
    docker("start", "--attach", runners.imports[0], check=False)
    assert container_state(runners.imports[0])["ExitCode"] == 2
    with pytest.raises(LaunchError, match="there is no scan runner"):
        launcher.launch(LaunchRequest(LaunchCommand.SCAN, launch_token=uuid.uuid4().hex))


def test_an_import_goes_to_the_account_it_names_in_the_same_volume(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("reads the runner's database (uid 10001, mode 0600) from the host folder: needs root, as CI")
    expected = runner_stack.write("old.mbox", mbox_messages[:500])
    launcher = runner_stack.launcher(runner_stack.provision(GMAIL_STATS_PARSE_WORKERS="1"))
    token = uuid.uuid4().hex
    launched = launcher.launch(
        LaunchRequest(LaunchCommand.IMPORT, launch_token=token, import_path="old.mbox", account="old")
    )
    wait_stopped(launcher, launched, timeout=120)
    work_db = runner_stack.data / "stats.old.db"
    assert counts_of(work_db) == expected and not runner_stack.db.exists()  # the default account was never touched
    assert query(work_db, "SELECT state FROM ingest_runs") == [("done",)]
    # The page's settings change runs `gmail-stats account` in an import runner (no network, no secrets needed).
    changed = launcher.launch(
        LaunchRequest(
            LaunchCommand.ACCOUNT, uuid.uuid4().hex, account="old", refresh="hourly", address="Old.Me@gmail.com"
        )
    )
    wait_stopped(launcher, changed, timeout=60)
    assert container_state(changed.handle.partition("@")[0])["ExitCode"] == 0
    settings = dict(query(work_db, "SELECT key, value FROM sync_state WHERE key IN ('refresh', 'gmail_address')"))
    assert settings == {"refresh": "hourly", "gmail_address": "old.me@gmail.com"}


def test_two_accounts_import_side_by_side_in_two_runners_each_exact(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    """Account `old`'s import is held mid-run (holding its own lock) while account `work`'s runs start to end in the
    pool's second runner; then the first finishes. Each database has exactly its own file's counts."""
    old_expected = runner_stack.write("old.mbox", mbox_messages)
    work_expected = runner_stack.write("work.mbox", mbox_messages[:900])
    runners = runner_stack.provision(GMAIL_STATS_PARSE_WORKERS="1")
    launcher = runner_stack.launcher(runners)
    old_request = LaunchRequest(LaunchCommand.IMPORT, uuid.uuid4().hex, import_path="old.mbox", account="old")
    old = launcher.launch(old_request)
    assert old.handle.startswith(f"{runners.imports[0]}@")
    with paused(runners.imports[0]):  # mid-run, holding account old's lock, however long this takes
        work_request = LaunchRequest(LaunchCommand.IMPORT, uuid.uuid4().hex, import_path="work.mbox", account="work")
        work = launcher.launch(work_request)
        assert work.handle.startswith(f"{runners.imports[1]}@") and launcher.is_alive(old)
        wait_stopped(launcher, work, timeout=120)
        assert launcher.is_alive(old)  # still held: the two runs overlapped
    wait_stopped(launcher, old, timeout=180)
    if os.geteuid() != 0:
        pytest.skip("reads the runners' databases (uid 10001, mode 0600) from the host folder: needs root, as CI")
    assert counts_of(runner_stack.data / "stats.work.db") == work_expected
    assert counts_of(runner_stack.data / "stats.old.db") == old_expected
    assert query(runner_stack.data / "stats.old.db", "SELECT state, outcome FROM ingest_runs") == [("done", "complete")]
    launcher.reap()
    assert sorted(p.name for p in runner_stack.requests.iterdir()) == []  # both spent requests deleted


def test_a_scheduled_refresh_takes_the_last_scan_runner_and_leaves_the_consent_port_free(
    runner_stack: RunnerStack,
) -> None:
    """An unattended scan never asks for consent, so it leaves the first scan runner (the one publishing the host's
    callback port) to a scan the person starts. Without credentials it fails at once, which is all this needs."""
    runner_stack.stack = replace(runner_stack.stack, secrets=str(writable_dir(runner_stack.data.parent / "secrets")))
    runners = runner_stack.provision()
    assert len(runners.scans) == 2
    launcher = runner_stack.launcher(runners)
    launched = launcher.launch(LaunchRequest(LaunchCommand.SCAN, uuid.uuid4().hex, unattended=True))
    assert launched.handle.startswith(f"{runners.scans[-1]}@")
    wait_stopped(launcher, launched, timeout=60)
    assert any("credentials.json" in line for line in launcher.log_tail(launched))
    assert launcher.consent_listener(launched, redirect_port=8765) == (runners.scans[-1], 8765)


def hold_callback_port(runner_stack: RunnerStack) -> str:
    """A container of the stack's own (removed with it) publishing the host's callback port, as a `make scan`
    waiting for consent does; returns its name."""
    wait_until_host_port_free(8765, why="this test's blocker publishes it")
    name = f"{runner_stack.name}-blocker"
    docker(
        "run", "--detach", "--name", name, "--label", f"{STACK_LABEL}={runner_stack.name}", "--publish",
        "127.0.0.1:8765:8765", "--entrypoint", "sleep", runner_stack.stack.image, "infinity",
    )  # fmt: skip
    return name


def test_a_scan_started_while_the_callback_port_is_held_for_good_fails_with_the_hint(runner_stack: RunnerStack) -> None:
    runner_stack.stack = replace(runner_stack.stack, secrets=str(writable_dir(runner_stack.data.parent / "secrets")))
    runners = runner_stack.provision(per_kind=1)
    hold_callback_port(runner_stack)
    launcher = DockerLauncher(connect(), runners, wait_seconds=1)
    runner_stack.launchers.append(launcher)
    with pytest.raises(LaunchError) as caught:
        launcher.launch(LaunchRequest(LaunchCommand.SCAN, uuid.uuid4().hex))
    assert "port is already allocated" in str(caught.value)
    assert caught.value.hint == "the OAuth callback port is in use: is `make scan` running in a terminal?"
    assert sorted(p.name for p in runner_stack.requests.iterdir()) == []  # the unstarted run's request is gone


def test_a_scan_starts_once_the_engine_lets_go_of_the_callback_port(runner_stack: RunnerStack) -> None:
    """The engine refuses the port while another container publishes it, and for a moment after: the launch asks
    again until it is free, instead of telling the person to stop a `make scan` that has already ended."""
    runner_stack.stack = replace(runner_stack.stack, secrets=str(writable_dir(runner_stack.data.parent / "secrets")))
    runners = runner_stack.provision(per_kind=1)
    blocker = hold_callback_port(runner_stack)
    launcher = DockerLauncher(connect(), runners, wait_seconds=120)
    runner_stack.launchers.append(launcher)
    outcome: list[Launched | BaseException] = []

    def launch() -> None:
        try:
            outcome.append(launcher.launch(LaunchRequest(LaunchCommand.SCAN, uuid.uuid4().hex)))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=launch)
    thread.start()
    # The runner was refused the port at least once (the engine records why on the container) ...
    wait_for(
        lambda: "already allocated" in str(container_state(runners.scans[0]).get("Error", "")) or outcome,
        timeout=60,
        what="the first start of the scan runner to be refused the port",
    )
    assert not outcome, outcome
    docker("rm", "--force", blocker)  # ... then the port's holder ends
    thread.join(timeout=150)
    assert not thread.is_alive()
    [launched] = outcome
    assert isinstance(launched, Launched), launched
    assert launched.handle.startswith(f"{runners.scans[0]}@")
    wait_stopped(launcher, launched, timeout=60)
    assert any("credentials.json" in line for line in launcher.log_tail(launched))  # it ran: no credentials here


def test_a_refused_path_fails_in_the_runner_with_its_reason_in_the_log(runner_stack: RunnerStack) -> None:
    (runner_stack.imports / "link.mbox").symlink_to("/etc/passwd")
    launcher = runner_stack.launcher(runner_stack.provision())
    launched = launcher.launch(import_request(import_path="link.mbox"))
    wait_stopped(launcher, launched, timeout=60)
    assert container_state(launched.handle.partition("@")[0])["ExitCode"] == 1
    assert any("without following a link" in line for line in launcher.log_tail(launched))
    assert not runner_stack.db.exists()


def test_a_missing_image_is_a_launch_error_with_a_hint(tmp_path: Path) -> None:
    ensure_image()
    missing = DockerStack(name="gmstest-missing", image="gmail-stats:nonexistent", data="d", requests=str(tmp_path))
    client = connect()
    try:
        with pytest.raises(LaunchError) as caught:
            provision_runners(client, missing, environment={}, requests_dir=str(tmp_path))
        assert caught.value.hint == "build it: docker compose build"
    finally:
        client.close()
