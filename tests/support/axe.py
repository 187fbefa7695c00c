"""axe-core for the browser tests: installed from the pinned lock in tests/axe/ by `npm ci` on first use (test-only,
never served by the viewer), injected into a page through Playwright and run there. Every page a browser test opens
with `new_page` is audited when the test closes it (`close_page`) and, if still open, when the test ends (the
autouse fixture in tests/conftest.py), so each state a test leaves a page in is checked, not only the ones named."""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

AXE_DIR = Path(__file__).parent.parent / "axe"
AXE_SCRIPT = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
# The impacts the issue counts: "minor" and "moderate" findings are reported by axe but do not fail a test.
BLOCKING = frozenset({"serious", "critical"})


def _unavailable(problem: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {problem}", pytrace=False)
    pytest.skip(problem)


@functools.cache
def axe_source() -> str:
    """The pinned axe-core script, installed with `npm ci` (integrity-checked against tests/axe/package-lock.json)."""
    if not AXE_SCRIPT.exists():
        npm = shutil.which("npm")
        if npm is None:
            _unavailable("npm is not installed, so axe-core cannot be (Debian/Ubuntu: sudo apt install npm)")
            raise AssertionError("unreachable")
        # Several test processes may start at once: one installs, the others wait for it.
        with (AXE_DIR / ".install.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not AXE_SCRIPT.exists():
                done = subprocess.run(
                    [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                    cwd=AXE_DIR,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if done.returncode != 0:
                    _unavailable(f"`npm ci` in {AXE_DIR} failed: {done.stderr.strip()[-500:]}")
    return AXE_SCRIPT.read_text(encoding="utf-8")


def violations(page: Page, *, blocking: bool = True) -> list[dict[str, Any]]:
    """axe's WCAG 2.x A/AA violations on the page as it is now (only serious and critical unless `blocking` is off):
    rule id, impact and the first few offending nodes. Evaluated over the DevTools protocol, so the page's CSP
    (no inline script, no eval) stays on."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
            const result = await window.axe.run(document, {
                runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
                resultTypes: ["violations"],
            });
            return result.violations.map((v) => ({
                id: v.id,
                impact: v.impact,
                help: v.help,
                nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
            }));
        }"""
    )
    return [v for v in found if not blocking or v["impact"] in BLOCKING]


def assert_clean(page: Page, where: str) -> None:
    """Fails when axe finds a serious or critical violation on the page as it is now."""
    found = violations(page)
    assert found == [], f"axe on {where}: {found}"


# The pages the running test opened with `new_page`, audited at its end if still open.
_tracked: list[Page] = []


def track(page: Page) -> None:
    _tracked.append(page)


def tracked() -> list[Page]:
    return list(_tracked)


def untrack(page: Page) -> None:
    if page in _tracked:
        _tracked.remove(page)


def audit_open_pages(test: str) -> None:
    """Audits every tracked page the test left open (at its end), then forgets them all."""
    pages = [p for p in _tracked if not p.is_closed()]
    _tracked.clear()
    for page in pages:
        assert_clean(page, f"the end of {test} ({page.url})")


def forget_pages() -> None:
    _tracked.clear()
