"""Issue 23 under Docker: an import started from the page API whose runner container is killed (`docker kill`,
SIGKILL) mid-run is reported by /api/status as stopped unexpectedly by the first status answer after the engine
sees the container gone (the row itself still says `running`: the field is derived), and Resume through the API
completes it with exact counts. The stack is tests/docker/stack.py's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.dockerenv import container_state, docker, ensure_image, paused, wait_for
from tests.docker.stack import Stack, running
from tests.support.browser import ARTIFACTS
from tests.support.factories import generate_messages, write_mbox

pytestmark = [pytest.mark.docker]
# Large enough that the runner is still mid-file when it is stopped (it is stopped, never throttled, while the
# test acts on it): about 100 MB.
MESSAGES = 60_000


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    ensure_image()
    yield from running(Stack(tmp_path))


def test_a_killed_runner_is_stopped_unexpectedly_within_one_poll_and_resume_is_exact(stack: Stack) -> None:
    expected = write_mbox(stack.imports / "big.mbox", generate_messages(count=MESSAGES, body_bytes=1500, senders=300))
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
