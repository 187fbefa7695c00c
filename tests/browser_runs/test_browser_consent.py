"""The page's consent panel in chromium: a redirect address pasted there reaches the scan's real consent listener;
one from another consent is refused in one line and the scan keeps waiting."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import text

from ingester.gmail.consent import Callback, wait_for_callback
from shared.db import writer_engine
from shared.lock import IngestLock
from shared.runs import create_run
from shared.schema.models import Source
from tests.support.browser import new_page, serve, shoot
from tests.support.net import free_port
from tests.support.viewer import make_settings, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000
STATE = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy"


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def test_a_pasted_redirect_address_reaches_the_waiting_scan(chromium: Browser, tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/"
    auth_url = f"https://accounts.google.com/o/oauth2/auth?state={STATE}&redirect_uri={quote(redirect, safe='')}"
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        run_id = create_run(conn, source=Source.GMAIL_API, pid=1, now=time.time())
        conn.execute(
            text("UPDATE ingest_runs SET state = 'awaiting_auth', auth_url = :u WHERE run_id = :r"),
            {"u": auth_url, "r": run_id},
        )
    engine.dispose()
    # The scan's own listener, as a terminal scan runs it: it takes only an answer carrying its state.
    answers: list[Callback] = []
    cancel = threading.Event()

    def listen() -> None:
        answers.append(wait_for_callback(bind="127.0.0.1", port=port, state=STATE, timeout=300, cancel=cancel))

    listener = threading.Thread(target=listen, daemon=True)
    lock = IngestLock(db_path)
    lock.acquire()
    listener.start()
    try:
        with serve(make_settings(tmp_path)) as url:
            page, console = new_page(chromium, width=1280, dark=False, timeout_ms=TIMEOUT_MS)
            page.goto(url)
            field = page.get_by_label("Browser showed an error page? Paste its address")
            expect(field).to_be_visible()
            field.fill(f"{redirect}?state=forged&code=4/0Ab-other")
            page.get_by_role("button", name="Send to the scan").click()
            message = page.locator("#progress-paste-message")
            expect(message).to_contain_text("that address is from another consent (its state differs)")
            expect(page.locator("#progress-chip")).to_have_text("awaiting consent")
            assert listener.is_alive() and answers == []
            shoot(page, "consent-paste-refused-1280", full_page=False)

            field.fill(f"{redirect}?state={STATE}&code=4/0Ab-right&scope=gmail.metadata")
            field.press("Enter")
            expect(message).to_contain_text("Consent handed to the scan")
            listener.join(30)
            assert answers == [Callback(code="4/0Ab-right", error=None)]
            expect(field).to_have_value("")
            assert console.problems == []
    finally:
        cancel.set()
        listener.join(30)
        lock.release()
