"""Shared fixtures: real database files in `tmp_path`, the real CLI run as a child process, and Debian's chromium
with a real viewer for the browser tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from playwright.sync_api import Browser, expect
from sqlalchemy import Engine

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migrations import migrate
from tests.support.axe import audit_open_pages, forget_pages
from tests.support.browser import browser, many_senders, seed_history, serve
from tests.support.viewer import make_settings, seed

REPO_ROOT = Path(__file__).resolve().parent.parent

# Properties check behaviour, never speed: on a loaded 2-core CI machine hypothesis' default 200 ms deadline and its
# too-slow health check fail examples that are merely descheduled (STYLE: speed is never asserted in unit tests).
settings.register_profile("gmail-stats", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gmail-stats")


def tracked_files() -> list[Path]:
    """The files git tracks in this checkout (skips outside one)."""
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    return [REPO_ROOT / name for name in listing.split("\0") if name and (REPO_ROOT / name).is_file()]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "stats.db"


@pytest.fixture
def migrated_engine(db_path: Path) -> Iterator[Engine]:
    """A writer engine on a freshly migrated real file (no lock: tests of single components only)."""
    engine = writer_engine(db_path)
    migrate(engine)
    yield engine
    close_writer_keeping_sidecars(engine, db_path)


def ingester_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GMAIL_STATS_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_cli(*args: str | os.PathLike[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs `python -m ingester ARGS` as a real process and returns its result (never raises on exit codes)."""
    return subprocess.run(
        [sys.executable, "-m", "ingester", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ingester_env(**env),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """Debian's chromium for one module's browser tests (skips without it; fails under CI=true). Module scope, since
    Playwright's sync API runs one instance at a time."""
    with browser() as instance:
        yield instance


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A viewer serving 120 senders and a run history that used to contradict itself, read-only, for one module."""
    tmp = tmp_path_factory.mktemp("filled")
    seed(tmp / "stats.db", many_senders())
    seed_history(tmp / "stats.db")
    with serve(make_settings(tmp)) as url:
        yield url


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keeps each phase's report on the test, so a fixture's teardown knows whether the test itself passed."""
    report: pytest.TestReport = yield
    item.stash.setdefault(PHASE_REPORTS, {})[report.when] = report
    return report


PHASE_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.fixture(autouse=True)
def _patient_expect(request: pytest.FixtureRequest) -> None:
    """Browser assertions wait up to 20 s (a loaded 2-core machine: they wait on states, never sleep); a file whose
    runs take longer sets its own, and its fixture runs after this one."""
    if request.node.get_closest_marker("browser") is not None:
        expect.set_options(timeout=20_000)


@pytest.fixture(autouse=True)
def _axe_at_the_end(request: pytest.FixtureRequest) -> Iterator[None]:
    """axe on every page a browser test left open, once the test passed (issue 23: 0 serious or critical
    violations on every screen and state the tests reach); pages it closed were audited by `close_page`."""
    forget_pages()
    yield
    if request.node.get_closest_marker("browser") is None:
        return
    call = request.node.stash.get(PHASE_REPORTS, {}).get("call")
    if call is None or not call.passed:
        forget_pages()
        return
    audit_open_pages(request.node.nodeid)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Work units for `pytest -n` (`--dist loadgroup`, as `make test` runs): a test file stays on one worker (its
    module fixtures are built once), and every Docker and browser test shares one worker. Docker tests share the
    engine, the test image's build and the OAuth callback port 8765; and each stack they start or stop adds or
    removes a bridge interface, which makes a chromium on another worker abort its requests in flight
    (`net::ERR_NETWORK_CHANGED`), so the browser tests never run beside them."""
    for item in items:
        engine_or_browser = item.get_closest_marker("docker") or item.get_closest_marker("browser")
        item.add_marker(pytest.mark.xdist_group("docker-and-browser" if engine_or_browser else item.path.name))
