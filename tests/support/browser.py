"""A real uvicorn server in a thread and Debian's chromium through Playwright (nothing is downloaded)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import add_warnings, create_run, finish_run, update_run
from shared.schema.models import RunOutcome, RunState, Source
from tests.support.axe import assert_clean, track, tracked, untrack
from tests.support.net import free_port
from viewer.app import create_app
from viewer.launch.launcher import Launcher
from viewer.settings import ViewerSettings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent.parent / "artifacts"


@contextmanager
def serve(settings: ViewerSettings, *, port: int | None = None, launcher: Launcher | None = None) -> Iterator[str]:
    """Serves `create_app(settings)` on loopback (`port`, or a free one); yields the base URL."""
    config = uvicorn.Config(
        create_app(settings, launcher=launcher),
        host="127.0.0.1",
        port=port or free_port(),
        log_level="warning",
        lifespan="on",
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
            # A 409/422/503 the page explains is logged by chromium as a failed resource; only report other errors.
            if "Failed to load resource" in text and any(code in text for code in ("409", "422", "503")):
                return
            self.problems.append(f"{message.type}: {text}")


def shoot(page: Page, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


# ---- Scenarios shared by the trust-bug tests ---------------------------------------------------------------------


def many_senders(count: int = 120) -> list[tuple[object, ...]]:
    """`count` senders with falling counts; every third mostly unread, every fourth a mailing list."""
    return [
        (
            f"user{i:03d}@{'news' if i % 4 == 0 else 'mail'}{i % 7}.example.com",
            f"{chr(90 - i % 26)}-person {i:03d}",  # names sort differently from addresses
            1000 - i,
            1_500_000_000 + i * 86_400,
            1_700_000_000 + i,
            (i + 1) * 10_000,
            (1000 - i) * 9 // 10 if i % 3 == 0 else i % 5,
            1 if i % 4 == 0 else 0,
        )
        for i in range(count)
    ]


def seed_history(db_path: Path) -> None:
    """Runs whose history used to contradict itself: done/complete, done/partial with warnings, a failed scan
    that counted nothing, a cancelled import with warnings."""
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        partial = create_run(conn, source=Source.MBOX, pid=1, now=1_700_000_100, mbox_path="/nowhere/p.mbox")
        update_run(conn, partial, now=1_700_000_110, messages_seen=500, messages_new=480, messages_skipped=20)
        add_warnings(conn, partial, ["byte 1234: a header line has no colon", "byte 99871: message without From"])
        finish_run(conn, partial, state=RunState.DONE, outcome=RunOutcome.PARTIAL, now=1_700_000_120)
        scan = create_run(conn, source=Source.GMAIL_API, pid=1, now=1_700_000_200)
        finish_run(
            conn,
            scan,
            state=RunState.FAILED,
            outcome=RunOutcome.PARTIAL,
            now=1_700_000_210,
            error_kind="missing_credentials",
            error="no OAuth client file at /secrets/credentials.json",
        )
        cancelled = create_run(conn, source=Source.MBOX, pid=1, now=1_700_000_300, mbox_path="/nowhere/c.mbox")
        update_run(
            conn, cancelled, now=1_700_000_310, messages_seen=300, messages_new=300, bytes_total=1000, bytes_done=470
        )
        add_warnings(conn, cancelled, ["byte 555: Date header unreadable"])
        finish_run(conn, cancelled, state=RunState.CANCELLED, outcome=RunOutcome.PARTIAL, now=1_700_000_320)
    close_writer_keeping_sidecars(engine, db_path)


def new_page(
    chromium: Browser, *, width: int = 1440, dark: bool = False, timeout_ms: int = 60_000
) -> tuple[Page, Console]:
    """A page in its own context; axe checks it when closed with `close_page` or when the test ends
    (tests/support/axe.py)."""
    context = chromium.new_context(
        viewport={"width": width, "height": 900 if width > 500 else 844}, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    track(page)
    return page, Console(page)


def close_page(page: Page, where: str = "") -> None:
    """Closes `page` and its context after axe found no serious or critical violation on it (if it is audited)."""
    if page in tracked():
        assert_clean(page, where or f"{page.url} as the test closed it")
        untrack(page)
    page.context.close()


# sender, display name, messages, unread, List-Unsubscribe header (or ""), one-click
FEATURE_SENDERS: list[tuple[str, str, int, int, str, bool]] = [
    (
        "news@shop.example.com",
        "Shop News",
        60,
        55,
        "<https://shop.example.com/unsub?u=1>, <mailto:u@shop.example.com>",
        True,
    ),
    ("deals@mail.shop.example.com", "Shop Deals", 20, 18, "<mailto:unsub@shop.example.com>", False),
    ("alice@friends.example.org", "Alice", 30, 0, "", False),
    ("bob@friends.example.org", "Bob", 12, 2, "", False),
    ("digest@news.example.co.uk", "Daily Digest", 15, 14, "<https://news.example.co.uk/u>", False),
    ("rare@once.example.net", "", 2, 2, "<https://once.example.net/u>", False),
]
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def feature_mbox() -> bytes:
    """A Takeout-like mbox with unread labels, List-Unsubscribe headers and dates spread over three years."""
    parts: list[bytes] = []
    n = 0
    for sender, name, count, unread, unsubscribe, one_click in FEATURE_SENDERS:
        for i in range(count):
            month = n % 36  # every month of 2021-2023 has mail
            when = f"{(i % 27) + 1:02d} {_MONTHS[month % 12]} {2021 + month // 12} 10:00:00 +0000"
            labels = "Inbox,Unread" if i < unread else "Inbox"
            head = f"From: {name} <{sender}>" if name else f"From: {sender}"
            lines = [
                f"From {n}@xxx Fri Dec 04 20:33:24 +0000 2020",
                head,
                f"Date: {when}",
                f"Message-ID: <{n}.feature@test>",
                f"X-Gmail-Labels: {labels}",
            ]
            if unsubscribe:
                lines.append(f"List-Unsubscribe: {unsubscribe}")
                if one_click:
                    lines.append("List-Unsubscribe-Post: List-Unsubscribe=One-Click")
            parts.append(("\n".join(lines) + "\n\nbody\n").encode())
            n += 1
    return b"".join(parts)
