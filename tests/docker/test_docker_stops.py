"""Stopping runs against the real engine, and Resume finishing each exactly. `DockerLauncher` on runners of the
test's own (tests/docker/stack.py's `RunnerStack`): cancel (SIGTERM, then SIGKILL after the grace period for an
ingester that ignores it), `docker kill` then the next run marking it abandoned, adoption by a new launcher after a
restart. Issue 23 on a whole compose stack (`Stack`): an import started from the page API whose runner is killed
(`docker kill`, SIGKILL) mid-run is reported by /api/status as stopped unexpectedly by the first status answer
after the engine sees the container gone (the row itself still says `running`: the field is derived).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.docker.dockerenv import container_state, docker, full_speed, paused, throttle, wait_for
from tests.docker.stack import RunnerStack, Stack, import_request
from tests.support.browser import ARTIFACTS
from tests.support.factories import GeneratedMessage, generate_messages, write_mbox
from tests.support.importing import counts_of, query
from tests.support.polling import wait_stopped
from viewer.launch.container_spec import STACK_LABEL
from viewer.launch.launcher import LaunchError
from viewer.settings import ViewerSettings

pytestmark = pytest.mark.docker
# The page's cancel waits as long as a viewer with default settings does (GMAIL_STATS_CANCEL_GRACE_SECONDS).
GRACE_SECONDS: float = ViewerSettings.model_fields["cancel_grace_seconds"].default
# Large enough that the runner is still mid-file when it is stopped (it is stopped, never throttled, while the
# test acts on it): about 100 MB.
KILLED_RUNNER_MESSAGES = 60_000


def test_cancel_stops_the_run_and_resume_finishes_exactly(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = runner_stack.write("a.mbox", mbox_messages)
    runners = runner_stack.provision()
    launcher = runner_stack.launcher(runners)
    launched = launcher.launch(import_request(import_path="a.mbox"))
    throttle(runners.imports[0])
    first = runner_stack.wait_state(launched, "running")
    with paused(runners.imports[0]):  # signalled mid-run, handled at full speed (a quota starves the handler)
        launcher.cancel(launched, grace_seconds=GRACE_SECONDS)
    run = runner_stack.wait_state(launched, "cancelled", "done", timeout=15)  # within the 10 s grace, not killed
    assert (run.state, run.outcome) == ("cancelled", "partial")
    wait_stopped(launcher, launched, timeout=15)
    assert container_state(runners.imports[0])["ExitCode"] == 0
    resumed = launcher.launch(import_request(import_path="a.mbox", resume_run_id=first.run_id))
    assert resumed.handle != launched.handle and not launcher.is_alive(launched)
    final = runner_stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (first.run_id, "complete")
    assert counts_of(runner_stack.db) == expected


def test_an_ingester_that_ignores_sigterm_is_killed_after_the_grace_period(runner_stack: RunnerStack) -> None:
    runners = runner_stack.provision()
    # The same runner name, but a program that ignores SIGTERM (as a wedged ingester would).
    docker("rm", "--force", runners.imports[0])
    docker(
        "create",
        "--name",
        runners.imports[0],
        "--label",
        f"{STACK_LABEL}={runner_stack.name}",
        "--network",
        "none",
        "--entrypoint",
        "python3",
        runner_stack.stack.image,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)",
    )
    launcher = runner_stack.launcher(runners)
    launched = launcher.launch(import_request(import_path="a.mbox"))
    wait_for(lambda: launcher.log_tail(launched) == ["up"], timeout=120, what="the stubborn program is up")
    cancelled_at = time.monotonic()
    launcher.cancel(launched, grace_seconds=2)
    wait_stopped(launcher, launched, timeout=60)
    assert time.monotonic() - cancelled_at >= 2  # SIGTERM ignored: it lived through the grace period
    assert container_state(runners.imports[0])["ExitCode"] == 137  # SIGKILL


def test_docker_kill_then_next_run_marks_abandoned_and_resume_is_exact(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    expected = runner_stack.write("big.mbox", mbox_messages)
    runner_stack.write("small.mbox", mbox_messages[:3])
    runners = runner_stack.provision()
    launcher = runner_stack.launcher(runners)
    killed = launcher.launch(import_request(import_path="big.mbox"))
    throttle(runners.imports[0])
    wait_for(lambda: (r := runner_stack.run(killed)) is not None and r.bytes_done > 0, timeout=90, what="progress")
    docker("kill", runners.imports[0])
    wait_stopped(launcher, killed, timeout=15)
    killed_run = runner_stack.run(killed)
    assert killed_run is not None and killed_run.state == "running"
    full_speed(runners.imports[0])
    other = launcher.launch(import_request(import_path="small.mbox"))
    runner_stack.wait_state(other, "done")
    assert query(runner_stack.db, f"SELECT state, error_kind FROM ingest_runs WHERE run_id = {killed_run.run_id}") == [
        ("abandoned", "abandoned")
    ]
    wait_stopped(launcher, other, timeout=30)
    resumed = launcher.launch(import_request(import_path="big.mbox", resume_run_id=killed_run.run_id))
    final = runner_stack.wait_state(resumed, "done", "failed")
    assert (final.run_id, final.outcome) == (killed_run.run_id, "complete")
    assert counts_of(runner_stack.db) == expected  # the small file's three messages are in the big one too


def test_a_new_launcher_adopts_the_running_runner_and_can_cancel_it(
    runner_stack: RunnerStack, mbox_messages: list[GeneratedMessage]
) -> None:
    runner_stack.write("a.mbox", mbox_messages)
    runners = runner_stack.provision(per_kind=1)  # a pool of one, so that a second launch finds it busy
    before = runner_stack.launcher(runners)
    launched = before.launch(import_request(import_path="a.mbox"))
    throttle(runners.imports[0])
    runner_stack.wait_state(launched, "running")
    before.close()  # the viewer restarts; provisioning leaves a running runner alone
    assert runner_stack.provision(per_kind=1) == runners
    after = runner_stack.launcher(runners)
    assert after.adopt() == [launched]
    assert after.is_alive(launched)
    with paused(runners.imports[0]):  # still running after the launch's 10 s wait for an exiting runner
        with pytest.raises(LaunchError, match="all 1 import runners are busy"):
            after.launch(import_request(import_path="a.mbox"))
        after.cancel(launched, grace_seconds=GRACE_SECONDS)
    assert runner_stack.wait_state(launched, "cancelled", timeout=15).outcome == "partial"
    wait_stopped(after, launched, timeout=15)
    assert after.adopt() == []


def test_a_killed_runner_is_stopped_unexpectedly_within_one_poll_and_resume_is_exact(stack: Stack) -> None:
    expected = write_mbox(
        stack.imports / "big.mbox", generate_messages(count=KILLED_RUNNER_MESSAGES, body_bytes=1500, senders=300)
    )
    total = sum(expected.values())
    response = stack.post("/api/runs", {"source": "mbox", "path": "big.mbox"})
    assert response.status_code == 202, response.text
    run_id: int = response.json()["run_id"]
    runner = f"{stack.name}-import-runner"

    def counted_some() -> bool:
        active = stack.status()["active_run"]
        return bool(active and active["run_id"] == run_id and active["messages_seen"] > 0)

    wait_for(counted_some, timeout=120, interval=0.2, what="the import has committed some messages")
    with paused(runner):  # held mid-run (SIGSTOP) while the test looks, then killed where it stands
        status = stack.status()
        assert (status["active_run"]["run_id"], status["ingest_lock_held"]) == (run_id, True)
        assert not (status["last_run"] or {}).get("stopped_unexpectedly")  # a stopped runner is not a dead one
        seen_before = status["active_run"]["messages_seen"]
        assert 0 < seen_before < total
        docker("kill", runner)  # SIGKILL, delivered to a stopped process too
    wait_for(lambda: not container_state(runner).get("Running"), timeout=60, what="the engine sees the runner gone")
    killed_at = time.monotonic()

    # One poll: the first status answer after the runner is gone already says so.
    status = stack.status()
    answered_in = time.monotonic() - killed_at
    assert status["active_run"] is None, status["active_run"]
    last = status["last_run"]
    assert (last["run_id"], last["state"], last["stopped_unexpectedly"]) == (run_id, "running", True)
    assert status["ingest_lock_held"] is False
    assert 0 < last["messages_seen"] < total
    runs = stack.get("/api/runs")["runs"]
    assert [(r["run_id"], r["state"], r["stopped_unexpectedly"]) for r in runs] == [(run_id, "running", True)]

    resumed = stack.post("/api/runs", {"source": "mbox", "resume_run_id": run_id})
    assert resumed.status_code == 202, resumed.text
    assert resumed.json()["run_id"] == run_id  # resumed in place, not a second run
    final = stack.wait_run(run_id, "done", "failed", timeout=300)
    assert (final["state"], final["outcome"], final["messages_new"]) == ("done", "complete", total)
    assert final["stopped_unexpectedly"] is False
    assert stack.status()["last_run"]["stopped_unexpectedly"] is False
    exported = stack.compose("run", "--rm", "ingester", "export")
    assert {row["sender"]: row["mails_sent"] for row in json.loads(exported.stdout)["senders"]} == expected
    assert len(stack.get("/api/runs")["runs"]) == 1
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "docker-killed-runner.txt").write_text(
        f"stopped unexpectedly in the first status answer, {answered_in:.2f} s after the engine saw the kill; "
        f"killed at {seen_before} of {total} messages seen\n"
    )
