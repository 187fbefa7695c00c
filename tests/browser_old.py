"""The page before and after issue 10, for the trust-bug tests: each scenario runs on both and shows the failing
state first. "before" serves the page files of `OLD_REF` (read from git) in place of today's, against today's API."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable
from typing import Literal

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser_support import Console, new_page, shoot
from tests.conftest import REPO_ROOT

OLD_REF = "f371303"  # main before the issue-10 page work: the page every trust bug was seen on
OLD_FILES = {"/": "index.html", "/static/app.js": "app.js", "/static/app.css": "app.css"}
Version = Literal["before", "fixed"]


# The old page first, so a run shows each failing state before its fix.
versions = pytest.mark.parametrize("version", ["before", "fixed"])


@functools.cache
def _old_files() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for url, name in OLD_FILES.items():
        try:
            shown = subprocess.run(
                ["git", "show", f"{OLD_REF}:viewer/static/{name}"], cwd=REPO_ROOT, capture_output=True, timeout=60
            )
        except FileNotFoundError:
            shown = None
        if shown is None or shown.returncode != 0:
            problem = (
                f"the page before issue 10 (git commit {OLD_REF}) is not in this checkout, so the failing state "
                "cannot be shown; a shallow clone needs `git fetch --unshallow`"
            )
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true but {problem}", pytrace=False)
            pytest.skip(problem)
        files[url] = shown.stdout
    return files


def open_page(
    chromium: Browser, url: str, version: Version, *, width: int = 1440, dark: bool = False
) -> tuple[Page, Console]:
    """A new page that shows `version` of the viewer served at `url` (not yet loaded)."""
    old = _old_files() if version == "before" else {}
    expect.set_options(timeout=20_000)  # a loaded 2-core machine: assertions wait, they never sleep
    page, console = new_page(chromium, width=width, dark=dark, audit=version == "fixed")
    for path, body in old.items():
        page.route(url + path, _serving(body))
    return page, console


def _serving(body: bytes) -> Callable[[Route], None]:
    def swap(route: Route) -> None:
        route.fulfill(response=route.fetch(), body=body)  # today's headers (CSP included), the old file

    return swap


def shoot_version(page: Page, bug: str, version: Version, *, full_page: bool = True) -> None:
    """`tests/artifacts/trust-BUG-before.png` beside `trust-BUG-fixed.png`."""
    shoot(page, f"trust-{bug}-{version}", full_page=full_page)
