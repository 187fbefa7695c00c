"""`DockerLauncher` stopping runs against the real engine: cancel (SIGTERM, then SIGKILL after the grace period for
an ingester that ignores it), `docker kill` then the next run marking it abandoned, adoption by a new launcher after
a restart, and Resume finishing each exactly.

Each test provisions runners of its own (tests/docker/stack.py's `RunnerStack`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.dockerenv import container_state, docker, ensure_image, full_speed, paused, throttle, wait_for
from tests.docker.stack import RunnerStack, import_request
from tests.support.factories import GeneratedMessage, generate_messages
from tests.support.importing import counts_of, query
from viewer.launch.container_spec import STACK_LABEL
from viewer.launch.launcher import LaunchError
from viewer.settings import ViewerSettings

pytestmark = pytest.mark.docker
# The page's cancel waits as long as a viewer with default settings does (GMAIL_STATS_CANCEL_GRACE_SECONDS).
GRACE_SECONDS: float = ViewerSettings.model_fields["cancel_grace_seconds"].default


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[RunnerStack]:
    made = RunnerStack(tmp_path, ensure_image())
    yield made
    made.close()


@pytest.fixture(scope="module")
def mbox_messages() -> list[GeneratedMessage]:
    return list(generate_messages(count=6000, body_bytes=1500, senders=300, spam_every=40))


def test_cancel_stops_the_run_and_resume_finishes_exactly(
    stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = stack.write("a.mbox", mbox_messages)
    runners = stack.provision()
    launcher = stack.launcher(runners)
    launched = launcher.launch(import_request(import_path="a.mbox"))
    throttle(runners.imports[0])
    first = stack.wait_state(launched, "running")
    with paused(runners.imports[0]):  # signalled mid-run, handled at full speed (a quota starves the handler)
        launcher.cancel(launched, grace_seconds=GRACE_SECONDS)
    run = stack.wait_state(launched, "cancelled", "done", timeout=15)  # within the 10 s grace, not killed
    assert (run.state, run.outcome) == ("cancelled", "partial")
    assert launcher.wait_for_exit(launched, timeout=15)
    assert container_state(runners.imports[0])["ExitCode"] == 0
    resumed = launcher.launch(import_request(import_path="a.mbox", resume_run_id=first.run_id))
    assert resumed.handle != launched.handle and not launcher.is_alive(launched)
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (first.run_id, "complete")
    assert counts_of(stack.db) == expected


def test_an_ingester_that_ignores_sigterm_is_killed_after_the_grace_period(stack: RunnerStack) -> None:
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
    launched = launcher.launch(import_request(import_path="a.mbox"))
    wait_for(lambda: launcher.log_tail(launched) == ["up"], timeout=120, what="the stubborn program is up")
    cancelled_at = time.monotonic()
    launcher.cancel(launched, grace_seconds=2)
    assert launcher.wait_for_exit(launched, timeout=60)
    assert time.monotonic() - cancelled_at >= 2  # SIGTERM ignored: it lived through the grace period
    assert container_state(runners.imports[0])["ExitCode"] == 137  # SIGKILL


def test_docker_kill_then_next_run_marks_abandoned_and_resume_is_exact(
    stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = stack.write("big.mbox", mbox_messages)
    stack.write("small.mbox", mbox_messages[:3])
    runners = stack.provision()
    launcher = stack.launcher(runners)
    killed = launcher.launch(import_request(import_path="big.mbox"))
    throttle(runners.imports[0])
    wait_for(lambda: (r := stack.run(killed)) is not None and r.bytes_done > 0, timeout=90, what="progress")
    docker("kill", runners.imports[0])
    assert launcher.wait_for_exit(killed, timeout=15)
    killed_run = stack.run(killed)
    assert killed_run is not None and killed_run.state == "running"
    full_speed(runners.imports[0])
    other = launcher.launch(import_request(import_path="small.mbox"))
    stack.wait_state(other, "done")
    assert query(stack.db, f"SELECT state, error_kind FROM ingest_runs WHERE run_id = {killed_run.run_id}") == [
        ("abandoned", "abandoned")
    ]
    assert launcher.wait_for_exit(other, timeout=30)
    resumed = launcher.launch(import_request(import_path="big.mbox", resume_run_id=killed_run.run_id))
    final = stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (killed_run.run_id, "complete")
    assert counts_of(stack.db) == expected  # the small file's three messages are in the big one too


def test_a_new_launcher_adopts_the_running_runner_and_can_cancel_it(
    stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    stack.write("a.mbox", mbox_messages)
    runners = stack.provision(per_kind=1)  # a pool of one, so that a second launch finds it busy
    before = stack.launcher(runners)
    launched = before.launch(import_request(import_path="a.mbox"))
    throttle(runners.imports[0])
    stack.wait_state(launched, "running")
    before.close()  # the viewer restarts; provisioning leaves a running runner alone
    assert stack.provision(per_kind=1) == runners
    after = stack.launcher(runners)
    assert after.adopt() == [launched]
    assert after.is_alive(launched)
    with paused(runners.imports[0]):  # still running after the launch's 10 s wait for an exiting runner
        with pytest.raises(LaunchError, match="all 1 import runners are busy"):
            after.launch(import_request(import_path="a.mbox"))
        after.cancel(launched, grace_seconds=GRACE_SECONDS)
    assert stack.wait_state(launched, "cancelled", timeout=15).outcome == "partial"
    assert after.wait_for_exit(launched, timeout=15)
    assert after.adopt() == []
