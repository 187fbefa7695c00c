"""The compose stack's one-shot ingester: `make import MBOX=…` (spaces in the path) through a container, and the
flock on the shared volume refusing a second ingester (exit 75) while a launched one runs."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.launch_request import LaunchCommand, LaunchRequest
from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import (
    IMAGE,
    compose_env,
    docker,
    ensure_image,
    paused,
    remove_containers,
    throttle,
    wait_for,
)
from tests.support.factories import generate_messages, write_mbox
from tests.support.polling import wait_stopped
from viewer.launch.container_spec import STACK_LABEL, DockerStack, stack_from_container
from viewer.launch.launch_docker import connect, provision_runners
from viewer.launch.runner_launcher import DockerLauncher

pytestmark = pytest.mark.docker


@dataclass
class Project:
    name: str
    env: dict[str, str]
    imports: Path

    def compose(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def make(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "--no-print-directory", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def runs(self) -> list[dict[str, object]]:
        result = self.compose("run", "--rm", "ingester", "runs", "--json")
        # A launched ingester may not have created or migrated the file yet: nothing to list so far.
        if "no database in the stack's data volume yet" in result.stderr or "has an older schema" in result.stderr:
            return []
        assert result.returncode == 0, result.stderr
        runs: list[dict[str, object]] = json.loads(result.stdout)
        return runs


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    ensure_image()
    name = f"gmstest-{uuid.uuid4().hex[:8]}"
    imports = tmp_path / "imports"
    imports.mkdir()
    (tmp_path / "secrets").mkdir()
    env = compose_env(
        COMPOSE_PROJECT_NAME=name,
        GMAIL_STATS_VOLUME=f"{name}-data",
        GMAIL_STATS_IMPORTS=str(imports),
        GMAIL_STATS_SECRETS=str(tmp_path / "secrets"),
    )
    made = Project(name=name, env=env, imports=imports)
    yield made
    remove_containers(f"{STACK_LABEL}={name}")
    made.compose("--profile", "ingester", "down", "--volumes", "--remove-orphans")
    docker("volume", "rm", "--force", f"{name}-data", check=False)


def test_make_import_mounts_the_files_folder_read_only_even_with_spaces(project: Project, tmp_path: Path) -> None:
    folder = tmp_path / "My Takeout folder"
    folder.mkdir()
    mbox = folder / "All mail Including Spam and Trash.mbox"
    expected = write_mbox(mbox, generate_messages(count=500, body_bytes=200, senders=40, spam_every=10))
    result = project.make("import", f"MBOX={mbox}")
    assert result.returncode == 0, result.stderr
    (run,) = project.runs()
    assert (run["state"], run["outcome"], run["messages_new"]) == ("done", "complete", sum(expected.values()))
    assert run["mbox_path"] == str(mbox)  # the host's path, as given: the container's /mbox/… means nothing there
    exported = project.compose("run", "--rm", "ingester", "export")
    counts = {row["sender"]: row["mails_sent"] for row in json.loads(exported.stdout)["senders"]}
    assert counts == expected
    leftovers = docker("ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={project.name}")
    assert leftovers.stdout.split() == []  # `run --rm`: no finished container left


def test_make_import_without_a_file_says_how(project: Project) -> None:
    result = project.make("import")
    assert (result.returncode, result.stderr.strip().splitlines()[0]) != (0, "")
    assert "usage: make import MBOX=/path/to/file.mbox" in result.stderr


def test_a_second_ingester_is_refused_while_a_launched_one_holds_the_lock(project: Project, tmp_path: Path) -> None:
    expected = write_mbox(project.imports / "a.mbox", generate_messages(count=12000, body_bytes=1500, senders=300))
    requests = tmp_path / "requests"
    requests.mkdir()
    stack = DockerStack(
        name=project.name,
        image=ensure_image(),
        data=f"{project.name}-data",
        imports=str(project.imports),
        requests=str(requests),
    )
    project.compose("--profile", "ingester", "create", "--no-recreate")  # compose owns (and labels) the volume
    client = connect()
    runners = provision_runners(client, stack, environment={}, requests_dir=str(requests))
    launcher = DockerLauncher(client, runners)
    try:
        launched = launcher.launch(
            LaunchRequest(LaunchCommand.IMPORT, launch_token=uuid.uuid4().hex, import_path="a.mbox")
        )
        throttle(runners.imports[0], cpus="0.03")
        wait_for(lambda: any(r["state"] == "running" for r in project.runs()), timeout=90, what="launched run")
        with paused(runners.imports[0]):  # holding the lock mid-run while both are refused, on any machine
            refused = project.compose("run", "--rm", "ingester", "import", "/imports/a.mbox")
            assert refused.returncode == 75, refused.stderr
            assert "another ingester is already running against /data/stats.db" in refused.stderr
            via_make = project.make("import", f"MBOX={project.imports / 'a.mbox'}")
            assert via_make.returncode != 0 and "Error 75" in via_make.stderr
        wait_stopped(launcher, launched, timeout=120)
        (run,) = project.runs()  # the refused ingesters left no run and counted nothing twice
        assert (run["state"], run["messages_new"]) == ("done", sum(expected.values()))
        launcher.reap()
    finally:
        launcher.close()


def test_launched_ingesters_get_the_stacks_host_paths_whatever_folder_compose_ran_from(
    project: Project, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "some other folder"
    elsewhere.mkdir()
    env = {**project.env, "GMAIL_STATS_IMPORTS": "./tests/artifacts/docker-imports"}
    env.pop("GMAIL_STATS_SECRETS")
    created = subprocess.run(
        ["docker", "compose", "--file", str(REPO_ROOT / "compose.yaml"), "--profile", "ingester", "create", "ingester"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert created.returncode == 0, created.stderr
    (container_id,) = docker(
        "ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={project.name}"
    ).stdout.split()
    stack = stack_from_container(json.loads(docker("inspect", container_id).stdout)[0])
    assert stack == DockerStack(
        name=project.name,
        image=IMAGE,
        data=f"{project.name}-data",
        imports=str(REPO_ROOT / "tests/artifacts/docker-imports"),
        secrets=str(REPO_ROOT / "secrets"),
        network=f"{project.name}_default",
    )
