"""The Docker rooms' shared fixtures: a compose stack (tests/docker/stack.py's `Stack`), runners provisioned on
their own (`RunnerStack`) and the mailbox the launcher tests import."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.dockerenv import ensure_image
from tests.docker.stack import RunnerStack, Stack, running
from tests.support.factories import GeneratedMessage, generate_messages


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """A running compose stack with folders of its own; stopped and removed after the test."""
    ensure_image()
    yield from running(Stack(tmp_path))


@pytest.fixture
def runner_stack(tmp_path: Path) -> Iterator[RunnerStack]:
    """Runner containers of a stack of the test's own, for `DockerLauncher` without the viewer's container."""
    made = RunnerStack(tmp_path, ensure_image())
    yield made
    made.close()


@pytest.fixture(scope="module")
def mbox_messages() -> list[GeneratedMessage]:
    """About 10 MB over 300 senders: long enough to act on a run mid-file."""
    return list(generate_messages(count=6000, body_bytes=1500, senders=300, spam_every=40))
