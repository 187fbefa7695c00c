"""`DockerLauncher` against the real engine: one-shot import containers, cancel, `docker kill`, adoption, clean-up.

Each test uses a stack of its own (data in a host folder, so the run rows are read straight from the file).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from shared.db import reader_engine
from shared.runs import Run, run_by_launch_token
from tests.dockerenv import (
    container_state,
    containers_with_label,
    ensure_image,
    remove_containers,
    throttle,
    wait_for,
    writable_dir,
)
from tests.factories import generate_messages, write_mbox
from tests.importing import counts_of, query
from viewer.container_spec import STACK_LABEL, DockerStack
from viewer.launch_docker import DockerLauncher, connect
from viewer.launcher import LaunchCommand, Launched, LaunchError, LaunchRequest

pytestmark = pytest.mark.docker


class Stack:
    def __init__(self, tmp_path: Path, image: str) -> None:
        self.name = f"gmstest-{uuid.uuid4().hex[:8]}"
        self.imports = tmp_path / "imports"
        self.imports.mkdir()
        self.data = writable_dir(tmp_path / "data")
        self.db = self.data / "stats.db"
        self.stack = DockerStack(name=self.name, image=image, data=str(self.data), imports=str(self.imports))
        self.launchers: list[DockerLauncher] = []

    def launcher(self, **environment: str) -> DockerLauncher:
        launcher = DockerLauncher(connect(), self.stack, environment=environment)
        self.launchers.append(launcher)
        return launcher

    def run(self, launched: Launched) -> Run | None:
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
            message=f"run of {launched.launch_token} in {states}; last: {self.run(launched)}",
        )
        run = self.run(launched)
        assert run is not None
        return run

    def reap_all(self, launcher: DockerLauncher, *launched: Launched) -> None:
        """Waits for the containers to exit (a finished run row comes just before), reaps, and checks none is left."""
        for one in launched:
            assert launcher.wait_for_exit(one, timeout=60), f"{one.handle} still running"
        launcher.reap()
        assert containers_with_label(f"{STACK_LABEL}={self.name}") == []

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
def mbox_messages() -> list[object]:
    return list(generate_messages(count=6000, body_bytes=1500, senders=300, spam_every=40))


def write(stack: Stack, name: str, messages: list[object]) -> dict[str, int]:
    return write_mbox(stack.imports / name, messages)  # type: ignore[arg-type]


def request(token: str | None = None, **kwargs: object) -> LaunchRequest:
    return LaunchRequest(LaunchCommand.IMPORT, launch_token=token or uuid.uuid4().hex, **kwargs)  # type: ignore[arg-type]


def test_import_container_finishes_with_exact_counts_and_is_removed(stack: Stack, mbox_messages: list[object]) -> None:
    expected = write(stack, "Takeout file.mbox", mbox_messages)
    launcher = stack.launcher(GMAIL_STATS_PARSE_WORKERS="1")
    launched = launcher.launch(request(import_path="Takeout file.mbox"))
    run = stack.wait_state(launched, "done", "failed", "cancelled")
    assert (run.state, run.outcome, run.messages_new) == ("done", "complete", sum(expected.values()))
    assert run.mbox_path == "/imports/Takeout file.mbox"
    assert counts_of(stack.db) == expected
    wait_for(lambda: not launcher.is_alive(launched), timeout=30, message="container exits after its run")
    assert container_state(launched.handle)["ExitCode"] == 0
    stack.reap_all(launcher, launched)
    # The log outlives the container; `--quiet` leaves it empty unless something went wrong.
    assert launcher.log_tail(launched) == []


def test_cancel_stops_the_container_and_resume_finishes_exactly(stack: Stack, mbox_messages: list[object]) -> None:
    expected = write(stack, "a.mbox", mbox_messages)
    launcher = stack.launcher()
    launched = launcher.launch(request(import_path="a.mbox"))
    throttle(launched.handle)
    first = stack.wait_state(launched, "running")
    launcher.cancel(launched)
    run = stack.wait_state(launched, "cancelled", "done", timeout=15)  # within the 10 s grace, not killed
    assert (run.state, run.outcome) == ("cancelled", "partial")
    wait_for(lambda: not launcher.is_alive(launched), timeout=15, message="cancelled container exits")
    assert container_state(launched.handle)["ExitCode"] == 0
    resumed = launcher.launch(request(import_path="a.mbox", resume_run_id=first.run_id))
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (first.run_id, "complete")
    assert counts_of(stack.db) == expected
    stack.reap_all(launcher, launched, resumed)


def test_docker_kill_then_next_run_marks_abandoned_and_resume_is_exact(
    stack: Stack, mbox_messages: list[object]
) -> None:
    expected = write(stack, "big.mbox", mbox_messages)
    write(stack, "small.mbox", mbox_messages[:3])
    launcher = stack.launcher()
    killed = launcher.launch(request(import_path="big.mbox"))
    throttle(killed.handle)
    wait_for(lambda: (r := stack.run(killed)) is not None and r.bytes_done > 0, timeout=90, message="progress")
    from tests.dockerenv import docker

    docker("kill", killed.handle)
    wait_for(lambda: not launcher.is_alive(killed), timeout=15, message="killed container stops")
    killed_run = stack.run(killed)
    assert killed_run is not None and killed_run.state == "running"
    other = launcher.launch(request(import_path="small.mbox"))
    stack.wait_state(other, "done")
    assert query(stack.db, f"SELECT state, error_kind FROM ingest_runs WHERE run_id = {killed_run.run_id}") == [
        ("abandoned", "abandoned")
    ]
    resumed = launcher.launch(request(import_path="big.mbox", resume_run_id=killed_run.run_id))
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (killed_run.run_id, "complete")
    assert counts_of(stack.db) == expected  # the small file's three messages are in the big one too
    stack.reap_all(launcher, killed, other, resumed)


def test_a_new_launcher_adopts_a_running_container_and_can_cancel_it(stack: Stack, mbox_messages: list[object]) -> None:
    write(stack, "a.mbox", mbox_messages)
    before = stack.launcher()
    launched = before.launch(request(import_path="a.mbox"))
    throttle(launched.handle)
    stack.wait_state(launched, "running")
    before.close()  # the viewer restarts
    after = stack.launcher()
    assert after.adopt() == [launched]
    assert after.is_alive(launched)
    after.cancel(launched)
    assert stack.wait_state(launched, "cancelled", timeout=15).outcome == "partial"
    stack.reap_all(after, launched)
    assert after.adopt() == []


def test_a_missing_image_is_a_launch_error_with_a_hint(tmp_path: Path) -> None:
    ensure_image()
    launcher = DockerLauncher(
        connect(), DockerStack(name="gmstest-missing", image="gmail-stats:nonexistent", data="gmstest-missing")
    )
    try:
        with pytest.raises(LaunchError) as caught:
            launcher.launch(request(import_path="a.mbox"))
        assert caught.value.hint == "build it: docker compose build"
    finally:
        launcher.close()
