"""`DockerLauncher` against the real engine: runs in a stack's import runner, cancel (SIGTERM, then SIGKILL after the
grace period for an ingester that ignores it), `docker kill`, adoption after a restart, and spent requests.

Each test provisions runners of its own (data and requests in host folders, so run rows are read straight from the
file). The launcher talks to the engine directly here; the API filter in front of it is tested in the stack tests.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from shared.db import reader_engine
from shared.launch_request import LaunchCommand, LaunchRequest
from shared.runs import Run, run_by_launch_token
from tests.docker.dockerenv import (
    container_state,
    docker,
    ensure_image,
    full_speed,
    paused,
    remove_containers,
    throttle,
    wait_for,
    wait_until_host_port_free,
    writable_dir,
)
from tests.support.factories import GeneratedMessage, generate_messages, write_mbox
from tests.support.importing import counts_of, query
from viewer.launch.container_spec import STACK_LABEL, DockerStack, Runners
from viewer.launch.launch_docker import connect, provision_runners
from viewer.launch.launcher import Launched, LaunchError
from viewer.launch.runner_launcher import DockerLauncher

pytestmark = pytest.mark.docker


class Stack:
    def __init__(self, tmp_path: Path, image: str) -> None:
        self.name = f"gmstest-{uuid.uuid4().hex[:8]}"
        self.imports = tmp_path / "imports"
        self.imports.mkdir()
        self.data = writable_dir(tmp_path / "data")
        self.requests = tmp_path / "requests"
        self.requests.mkdir()
        self.db = self.data / "stats.db"
        self.stack = DockerStack(
            name=self.name, image=image, data=str(self.data), imports=str(self.imports), requests=str(self.requests)
        )
        self.launchers: list[DockerLauncher] = []

    def provision(self, *, per_kind: int = 2, **environment: str) -> Runners:
        client = connect()
        try:
            return provision_runners(
                client, self.stack, environment=environment, requests_dir=str(self.requests), per_kind=per_kind
            )
        finally:
            client.close()

    def launcher(self, runners: Runners) -> DockerLauncher:
        launcher = DockerLauncher(connect(), runners)
        self.launchers.append(launcher)
        return launcher

    def run(self, launched: Launched) -> Run | None:
        if os.geteuid() != 0:
            pytest.skip("reads the runner's database (uid 10001, mode 0600) from the host folder: needs root, as CI")
        if not self.db.exists():
            return None
        engine = reader_engine(self.db)
        try:
            with engine.connect() as conn:
                return run_by_launch_token(conn, launched.launch_token)
        except OperationalError:
            return None  # created but not migrated yet, or busy: look again
        finally:
            engine.dispose()

    def wait_state(self, launched: Launched, *states: str, timeout: float = 90) -> Run:
        wait_for(
            lambda: (run := self.run(launched)) is not None and run.state in states,
            timeout=timeout,
            what=f"run of {launched.launch_token} in {states}; last: {self.run(launched)}",
        )
        run = self.run(launched)
        assert run is not None
        return run

    def close(self) -> None:
        for launcher in self.launchers:
            launcher.close()
        remove_containers(f"{STACK_LABEL}={self.name}")


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    made = Stack(tmp_path, ensure_image())
    yield made
    made.close()


@pytest.fixture(scope="module")
def mbox_messages() -> list[GeneratedMessage]:
    return list(generate_messages(count=6000, body_bytes=1500, senders=300, spam_every=40))


def write(stack: Stack, name: str, messages: list[GeneratedMessage]) -> dict[str, int]:
    return write_mbox(stack.imports / name, messages)


def request(*, import_path: str, resume_run_id: int | None = None) -> LaunchRequest:
    return LaunchRequest(
        LaunchCommand.IMPORT, launch_token=uuid.uuid4().hex, import_path=import_path, resume_run_id=resume_run_id
    )


def test_import_runs_in_the_runner_with_exact_counts_and_its_request_is_then_spent(
    stack: Stack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = write(stack, "Takeout file.mbox", mbox_messages)
    runners = stack.provision(GMAIL_STATS_PARSE_WORKERS="1")
    assert (runners.imports[0], runners.scans) == (f"{stack.name}-import-runner", ())  # no secrets folder
    launcher = stack.launcher(runners)
    launched = launcher.launch(request(import_path="Takeout file.mbox"))
    run = stack.wait_state(launched, "done", "failed", "cancelled")
    assert (run.state, run.outcome, run.messages_new) == ("done", "complete", sum(expected.values()))
    assert run.mbox_path == f"{stack.imports}/Takeout file.mbox"  # the host's path, not the runner's /imports
    assert counts_of(stack.db) == expected
    assert launcher.wait_for_exit(launched, timeout=30)
    assert container_state(runners.imports[0])["ExitCode"] == 0
    assert launcher.log_tail(launched) == []  # `--quiet`: nothing went wrong
    launcher.reap()
    assert not (stack.requests / "import.json").exists()
    # Started by anyone but the launcher, the runner finds no request and runs nothing.
    docker("start", "--attach", runners.imports[0], check=False)
    assert container_state(runners.imports[0])["ExitCode"] == 2
    with pytest.raises(LaunchError, match="there is no scan runner"):
        launcher.launch(LaunchRequest(LaunchCommand.SCAN, launch_token=uuid.uuid4().hex))


def test_an_import_goes_to_the_account_it_names_in_the_same_volume(
    stack: Stack, mbox_messages: list[GeneratedMessage]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("reads the runner's database (uid 10001, mode 0600) from the host folder: needs root, as CI")
    expected = write(stack, "old.mbox", mbox_messages[:500])
    launcher = stack.launcher(stack.provision(GMAIL_STATS_PARSE_WORKERS="1"))
    token = uuid.uuid4().hex
    launched = launcher.launch(
        LaunchRequest(LaunchCommand.IMPORT, launch_token=token, import_path="old.mbox", account="old")
    )
    assert launcher.wait_for_exit(launched, timeout=120)
    work_db = stack.data / "stats.old.db"
    assert counts_of(work_db) == expected and not stack.db.exists()  # the default account was never touched
    assert query(work_db, "SELECT state FROM ingest_runs") == [("done",)]
    # The page's settings change runs `gmail-stats account` in an import runner (no network, no secrets needed).
    changed = launcher.launch(
        LaunchRequest(
            LaunchCommand.ACCOUNT, uuid.uuid4().hex, account="old", refresh="hourly", address="Old.Me@gmail.com"
        )
    )
    assert launcher.wait_for_exit(changed, timeout=60)
    assert container_state(changed.handle.partition("@")[0])["ExitCode"] == 0
    settings = dict(query(work_db, "SELECT key, value FROM sync_state WHERE key IN ('refresh', 'gmail_address')"))
    assert settings == {"refresh": "hourly", "gmail_address": "old.me@gmail.com"}


def test_two_accounts_import_side_by_side_in_two_runners_each_exact(
    stack: Stack, mbox_messages: list[GeneratedMessage]
) -> None:
    """Account `old`'s import is held mid-run (holding its own lock) while account `work`'s runs start to end in the
    pool's second runner; then the first finishes. Each database has exactly its own file's counts."""
    old_expected = write(stack, "old.mbox", mbox_messages)
    work_expected = write(stack, "work.mbox", mbox_messages[:900])
    runners = stack.provision(GMAIL_STATS_PARSE_WORKERS="1")
    launcher = stack.launcher(runners)
    old_request = LaunchRequest(LaunchCommand.IMPORT, uuid.uuid4().hex, import_path="old.mbox", account="old")
    old = launcher.launch(old_request)
    assert old.handle.startswith(f"{runners.imports[0]}@")
    with paused(runners.imports[0]):  # mid-run, holding account old's lock, however long this takes
        work_request = LaunchRequest(LaunchCommand.IMPORT, uuid.uuid4().hex, import_path="work.mbox", account="work")
        work = launcher.launch(work_request)
        assert work.handle.startswith(f"{runners.imports[1]}@") and launcher.is_alive(old)
        assert launcher.wait_for_exit(work, timeout=120)
        assert launcher.is_alive(old)  # still held: the two runs overlapped
    assert launcher.wait_for_exit(old, timeout=180)
    if os.geteuid() != 0:
        pytest.skip("reads the runners' databases (uid 10001, mode 0600) from the host folder: needs root, as CI")
    assert counts_of(stack.data / "stats.work.db") == work_expected
    assert counts_of(stack.data / "stats.old.db") == old_expected
    assert query(stack.data / "stats.old.db", "SELECT state, outcome FROM ingest_runs") == [("done", "complete")]
    launcher.reap()
    assert sorted(p.name for p in stack.requests.iterdir()) == []  # both spent requests deleted


def test_a_scheduled_refresh_takes_the_last_scan_runner_and_leaves_the_consent_port_free(stack: Stack) -> None:
    """An unattended scan never asks for consent, so it leaves the first scan runner (the one publishing the host's
    callback port) to a scan the person starts. Without credentials it fails at once, which is all this needs."""
    stack.stack = replace(stack.stack, secrets=str(writable_dir(stack.data.parent / "secrets")))
    runners = stack.provision()
    assert len(runners.scans) == 2
    launcher = stack.launcher(runners)
    launched = launcher.launch(LaunchRequest(LaunchCommand.SCAN, uuid.uuid4().hex, unattended=True))
    assert launched.handle.startswith(f"{runners.scans[-1]}@")
    assert launcher.wait_for_exit(launched, timeout=60)
    assert any("credentials.json" in line for line in launcher.log_tail(launched))
    assert launcher.consent_listener(launched, redirect_port=8765) == (runners.scans[-1], 8765)


def hold_callback_port(stack: Stack) -> str:
    """A container of the stack's own (removed with it) publishing the host's callback port, as a `make scan`
    waiting for consent does; returns its name."""
    wait_until_host_port_free(8765, why="this test's blocker publishes it")
    name = f"{stack.name}-blocker"
    docker(
        "run", "--detach", "--name", name, "--label", f"{STACK_LABEL}={stack.name}", "--publish",
        "127.0.0.1:8765:8765", "--entrypoint", "sleep", stack.stack.image, "infinity",
    )  # fmt: skip
    return name


def test_a_scan_started_while_the_callback_port_is_held_for_good_fails_with_the_hint(stack: Stack) -> None:
    stack.stack = replace(stack.stack, secrets=str(writable_dir(stack.data.parent / "secrets")))
    runners = stack.provision(per_kind=1)
    hold_callback_port(stack)
    launcher = DockerLauncher(connect(), runners, wait_seconds=1)
    stack.launchers.append(launcher)
    with pytest.raises(LaunchError) as caught:
        launcher.launch(LaunchRequest(LaunchCommand.SCAN, uuid.uuid4().hex))
    assert "port is already allocated" in str(caught.value)
    assert caught.value.hint == "the OAuth callback port is in use: is `make scan` running in a terminal?"
    assert sorted(p.name for p in stack.requests.iterdir()) == []  # the unstarted run's request is gone


def test_a_scan_starts_once_the_engine_lets_go_of_the_callback_port(stack: Stack) -> None:
    """The engine refuses the port while another container publishes it, and for a moment after: the launch asks
    again until it is free, instead of telling the person to stop a `make scan` that has already ended."""
    stack.stack = replace(stack.stack, secrets=str(writable_dir(stack.data.parent / "secrets")))
    runners = stack.provision(per_kind=1)
    blocker = hold_callback_port(stack)
    launcher = DockerLauncher(connect(), runners, wait_seconds=120)
    stack.launchers.append(launcher)
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
    assert launcher.wait_for_exit(launched, timeout=60)
    assert any("credentials.json" in line for line in launcher.log_tail(launched))  # it ran: no credentials here


def test_a_refused_path_fails_in_the_runner_with_its_reason_in_the_log(stack: Stack) -> None:
    (stack.imports / "link.mbox").symlink_to("/etc/passwd")
    launcher = stack.launcher(stack.provision())
    launched = launcher.launch(request(import_path="link.mbox"))
    assert launcher.wait_for_exit(launched, timeout=60)
    assert container_state(launched.handle.partition("@")[0])["ExitCode"] == 1
    assert any("without following a link" in line for line in launcher.log_tail(launched))
    assert not stack.db.exists()


def test_cancel_stops_the_run_and_resume_finishes_exactly(stack: Stack, mbox_messages: list[GeneratedMessage]) -> None:
    expected = write(stack, "a.mbox", mbox_messages)
    runners = stack.provision()
    launcher = stack.launcher(runners)
    launched = launcher.launch(request(import_path="a.mbox"))
    throttle(runners.imports[0])
    first = stack.wait_state(launched, "running")
    with paused(runners.imports[0]):  # signalled mid-run, handled at full speed (a quota starves the handler)
        launcher.cancel(launched)
    run = stack.wait_state(launched, "cancelled", "done", timeout=15)  # within the 10 s grace, not killed
    assert (run.state, run.outcome) == ("cancelled", "partial")
    assert launcher.wait_for_exit(launched, timeout=15)
    assert container_state(runners.imports[0])["ExitCode"] == 0
    resumed = launcher.launch(request(import_path="a.mbox", resume_run_id=first.run_id))
    assert resumed.handle != launched.handle and not launcher.is_alive(launched)
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (first.run_id, "complete")
    assert counts_of(stack.db) == expected


def test_an_ingester_that_ignores_sigterm_is_killed_after_the_grace_period(stack: Stack) -> None:
    runners = stack.provision()
    # The same runner name, but a program that ignores SIGTERM (as a wedged ingester would).
    docker("rm", "--force", runners.imports[0])
    docker(
        "create",
        "--name",
        runners.imports[0],
        "--label",
        f"{STACK_LABEL}={stack.name}",
        "--network",
        "none",
        "--entrypoint",
        "python3",
        stack.stack.image,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)",
    )
    launcher = stack.launcher(runners)
    launched = launcher.launch(request(import_path="a.mbox"))
    wait_for(lambda: launcher.log_tail(launched) == ["up"], timeout=120, what="the stubborn program is up")
    cancelled_at = time.monotonic()
    launcher.cancel(launched, grace_seconds=2)
    assert launcher.wait_for_exit(launched, timeout=60)
    assert time.monotonic() - cancelled_at >= 2  # SIGTERM ignored: it lived through the grace period
    assert container_state(runners.imports[0])["ExitCode"] == 137  # SIGKILL


def test_docker_kill_then_next_run_marks_abandoned_and_resume_is_exact(
    stack: Stack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = write(stack, "big.mbox", mbox_messages)
    write(stack, "small.mbox", mbox_messages[:3])
    runners = stack.provision()
    launcher = stack.launcher(runners)
    killed = launcher.launch(request(import_path="big.mbox"))
    throttle(runners.imports[0])
    wait_for(lambda: (r := stack.run(killed)) is not None and r.bytes_done > 0, timeout=90, what="progress")
    docker("kill", runners.imports[0])
    assert launcher.wait_for_exit(killed, timeout=15)
    killed_run = stack.run(killed)
    assert killed_run is not None and killed_run.state == "running"
    full_speed(runners.imports[0])
    other = launcher.launch(request(import_path="small.mbox"))
    stack.wait_state(other, "done")
    assert query(stack.db, f"SELECT state, error_kind FROM ingest_runs WHERE run_id = {killed_run.run_id}") == [
        ("abandoned", "abandoned")
    ]
    assert launcher.wait_for_exit(other, timeout=30)
    resumed = launcher.launch(request(import_path="big.mbox", resume_run_id=killed_run.run_id))
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (killed_run.run_id, "complete")
    assert counts_of(stack.db) == expected  # the small file's three messages are in the big one too


def test_a_new_launcher_adopts_the_running_runner_and_can_cancel_it(
    stack: Stack, mbox_messages: list[GeneratedMessage]
) -> None:
    write(stack, "a.mbox", mbox_messages)
    runners = stack.provision(per_kind=1)  # a pool of one, so that a second launch finds it busy
    before = stack.launcher(runners)
    launched = before.launch(request(import_path="a.mbox"))
    throttle(runners.imports[0])
    stack.wait_state(launched, "running")
    before.close()  # the viewer restarts; provisioning leaves a running runner alone
    assert stack.provision(per_kind=1) == runners
    after = stack.launcher(runners)
    assert after.adopt() == [launched]
    assert after.is_alive(launched)
    with paused(runners.imports[0]):  # still running after the launch's 10 s wait for an exiting runner
        with pytest.raises(LaunchError, match="all 1 import runners are busy"):
            after.launch(request(import_path="a.mbox"))
        after.cancel(launched)
    assert stack.wait_state(launched, "cancelled", timeout=15).outcome == "partial"
    assert after.wait_for_exit(launched, timeout=15)
    assert after.adopt() == []


def test_a_missing_image_is_a_launch_error_with_a_hint(tmp_path: Path) -> None:
    ensure_image()
    stack = DockerStack(name="gmstest-missing", image="gmail-stats:nonexistent", data="d", requests=str(tmp_path))
    client = connect()
    try:
        with pytest.raises(LaunchError) as caught:
            provision_runners(client, stack, environment={}, requests_dir=str(tmp_path))
        assert caught.value.hint == "build it: docker compose build"
    finally:
        client.close()
