"""A real uvicorn server in a thread and Debian's chromium through Playwright (nothing is downloaded)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from viewer.app import create_app
from viewer.settings import ViewerSettings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(settings: ViewerSettings) -> Iterator[str]:
    """Serves `create_app(settings)` on a free loopback port; yields the base URL."""
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=_free_port(), log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="viewer-under-test", daemon=True)
    thread.start()
    try:
        for _ in range(600):
            if server.started:
                break
            thread.join(0.05)
        assert server.started, "the viewer did not start"
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(30)


def require_chromium() -> None:
    """Skips (fails under CI=true, which must run them) the browser tests when Debian's chromium is absent."""
    if Path(CHROMIUM).exists():
        return
    problem = f"no chromium at {CHROMIUM}: the browser tests need it (Debian/Ubuntu: sudo apt install chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {problem}", pytrace=False)
    pytest.skip(problem)


@contextmanager
def browser() -> Iterator[Browser]:
    require_chromium()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


class Console:
    """Collects console errors, page errors and CSP violations of one page."""

    def __init__(self, page: Page) -> None:
        self.problems: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.problems.append(f"pageerror: {exc}"))

    def _on_console(self, message: ConsoleMessage) -> None:
        text = message.text
        if message.type == "error" or "Content Security Policy" in text or "Refused to" in text:
            # A 503/409 the page handles is logged by chromium as a failed resource; only report other errors.
            if "Failed to load resource" in text and any(code in text for code in ("409", "503")):
                return
            self.problems.append(f"{message.type}: {text}")


def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
