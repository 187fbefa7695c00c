"""The page in Debian's chromium: onboarding to a filled table, table controls, progress states (cancel and resume
are in test_browser_trust_runs.py); no console errors and no CSP violations. Screenshots of the main states go to
tests/artifacts/."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.errors import RETRY_WARNING_PREFIX
from shared.lock import IngestLock
from shared.runs import create_run
from shared.schema.models import Source
from tests.support.browser import Console, close_page, new_page, serve, shoot
from tests.support.viewer import make_settings, mbox_bytes, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _page(chromium: Browser, *, width: int = 1280, dark: bool = False) -> tuple[Page, Console]:
    return new_page(chromium, width=width, dark=dark, timeout_ms=TIMEOUT_MS)


def _row_senders(page: Page) -> list[str]:
    senders = page.locator("#rows tr").evaluate_all("rows => rows.map(r => r.dataset.sender)")
    return [str(sender) for sender in senders]


def test_onboarding_pick_a_file_import_and_see_the_table(chromium: Browser, tmp_path: Path) -> None:
    folder = tmp_path / "imports" / "Takeout" / "Mail"
    folder.mkdir(parents=True)
    (folder / "All mail Including Spam and Trash.mbox").write_bytes(mbox_bytes(60_000, senders=230, tag="a"))
    (tmp_path / "imports" / "other.mbox").write_bytes(mbox_bytes(20, tag="b"))
    with serve(make_settings(tmp_path)) as url:
        page, console = _page(chromium)
        page.goto(url)
        expect(page.locator("#onboarding")).to_be_visible()
        expect(page.locator("#stats")).to_be_hidden()
        expect(page.locator("#import-file option")).to_have_count(2)
        shoot(page, "onboarding-1280-light")
        page.select_option("#import-file", "Takeout/Mail/All mail Including Spam and Trash.mbox")
        expect(page.locator("#import-command")).to_contain_text("All mail Including Spam and Trash.mbox")
        page.click("#start-import")
        expect(page.locator("#progress")).to_be_visible()
        expect(page.locator("#progress-source")).to_contain_text("Takeout import")
        expect(page.locator("#progress-cancel")).to_be_visible()  # launched here: owned
        shoot(page, "progress-1280-light")
        expect(page.locator("#stats")).to_be_visible()
        expect(page.locator("#tile-messages")).to_have_text("60,000")
        expect(page.locator("#tile-senders")).to_have_text("230")
        expect(page.locator("#progress")).to_be_hidden()
        expect(page.locator("#rows tr")).to_have_count(50)
        expect(page.locator("#history-list > li")).to_have_count(1)
        expect(page.locator("#history-list > li").first).to_contain_text("done")
        shoot(page, "table-1280-light")
        close_page(page)
        for width, dark, name in (
            (1280, True, "table-1280-dark"),
            (390, False, "table-390-light"),
            (390, True, "table-390-dark"),
        ):
            page2, console2 = _page(chromium, width=width, dark=dark)
            page2.goto(url)
            expect(page2.locator("#rows tr")).to_have_count(50)
            assert page2.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling
            shoot(page2, name)
            assert console2.problems == []
            close_page(page2)
        assert console.problems == []


def test_search_sort_paging_and_hide(chromium: Browser, tmp_path: Path, db_path: Path) -> None:
    seed(
        db_path,
        senders=[
            (f"user{i:03d}@example.com", f"User {i:03d}", 1000 - i, 1, 1_700_000_000 + i, i * 10, 0, i % 2)
            for i in range(120)
        ],
    )
    with serve(make_settings(tmp_path)) as url:
        page, console = _page(chromium)
        page.goto(url)
        expect(page.locator("#rows tr")).to_have_count(50)
        expect(page.locator("#range")).to_have_text("1\u201350 of 120 senders")
        assert _row_senders(page)[:2] == ["user000@example.com", "user001@example.com"]

        page.select_option("#page-size", "25")
        expect(page.locator("#rows tr")).to_have_count(25)
        page.click("#next")
        expect(page.locator("#range")).to_have_text("26\u201350 of 120 senders")
        assert _row_senders(page)[0] == "user025@example.com"

        page.click("th[data-col='who'] button.sort")
        expect(page.locator("#range")).to_have_text("1\u201325 of 120 senders")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user000@example.com")
        page.click("th[data-col='who'] button.sort")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user119@example.com")

        page.fill("#search", "user05")
        expect(page.locator("#range")).to_have_text("1\u201310 of 10 senders")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user059@example.com")

        page.locator("#rows tr").first.get_by_role("button", name=re.compile("^Hide")).click()
        expect(page.locator("#rows tr")).to_have_count(9)
        expect(page.locator("#undo")).to_be_visible()
        page.reload()  # page size and hidden senders are remembered; the search is not
        expect(page.locator("#rows tr")).to_have_count(25)
        expect(page.locator("#page-size")).to_have_value("25")
        page.fill("#search", "user05")
        expect(page.locator("#rows tr")).to_have_count(9)
        expect(page.locator("#hidden-count")).to_have_text("1")
        page.click("#hidden-toggle")
        page.locator("#hidden-list").get_by_role("button", name="Unhide user059@example.com").click()
        expect(page.locator("#rows tr")).to_have_count(10)
        expect(page.locator("#hidden-count")).to_have_text("0")
        assert console.problems == []


def test_progress_states_consent_stall_retry_failure_and_mixed_sources(
    chromium: Browser, tmp_path: Path, db_path: Path
) -> None:
    seed(db_path)
    engine = writer_engine(db_path)

    def write(sql: str, **params: object) -> None:
        with engine.begin() as conn:
            conn.execute(text(sql), params)

    with engine.begin() as conn:
        run_id = create_run(conn, source=Source.GMAIL_API, pid=1, now=time.time())
        for i in range(4):  # scan rows without a Message-ID beside an earlier import: mixed sources
            conn.execute(text("INSERT INTO seen_mails (mail_id, source) VALUES (:m, 'gmail_api')"), {"m": f"18c{i}"})
    consent = "https://accounts.google.com/o/oauth2/auth?client_id=x&state=y"
    write(
        "UPDATE ingest_runs SET state = 'awaiting_auth', auth_url = :u, total_estimate = 5000 WHERE run_id = :r",
        u=consent,
        r=run_id,
    )
    lock = IngestLock(db_path)  # a terminal ingester "runs" until the lock is released
    lock.acquire()
    try:
        with serve(make_settings(tmp_path)) as url:
            page, console = _page(chromium, dark=True)
            page.goto(url)
            link = page.locator("#progress-consent-link")
            expect(link).to_be_visible()
            expect(link).to_have_attribute("href", consent)
            expect(link).to_have_attribute("rel", "noopener noreferrer")
            expect(page.locator("#progress-chip")).to_have_text("awaiting consent")
            expect(page.locator("#progress-elsewhere")).to_be_visible()  # started in a terminal: no Cancel
            expect(page.locator("#progress-cancel")).to_be_hidden()
            expect(page.locator("#mixed")).to_be_visible()
            expect(page.locator("#mixed-text")).to_contain_text("4 scanned messages")
            shoot(page, "consent-1280-dark")

            write("UPDATE ingest_runs SET auth_url = 'https://evil.example/o/oauth2/auth' WHERE run_id = :r", r=run_id)
            expect(page.locator("#progress-consent")).to_be_hidden()  # only Google's own origin gets a link

            write(
                "UPDATE ingest_runs SET state = 'running', auth_url = NULL, messages_seen = 1500, messages_new = 1200,"
                " updated_at_unix = :t, warnings_tail = :w WHERE run_id = :r",
                t=int(time.time()) - 60,
                w=json.dumps([f"{RETRY_WARNING_PREFIX} attempt 1 in 4.0 s after messages.get: 429"]),
                r=run_id,
            )
            expect(page.locator("#progress-stalled")).to_be_visible()
            expect(page.locator("#progress-retry")).to_be_visible()
            expect(page.locator("#progress-eta")).to_contain_text("30%")
            shoot(page, "running-stalled-1280-dark")
            write(
                "UPDATE ingest_runs SET state = 'failed', outcome = 'partial', error_kind = 'policy_enforced',"
                " error = 'Error 400: policy_enforced', finished_at_unix = :t WHERE run_id = :r",
                t=int(time.time()),
                r=run_id,
            )
            lock.release()  # the ingester ended: the failure stays at the top with its remedy
            expect(page.locator("#run-banner")).to_be_visible()
            expect(page.locator("#run-banner-title")).to_have_text("Scan failed at 30% — counts are partial.")
            expect(page.locator("#run-banner-text")).to_contain_text("Advanced Protection")
            expect(page.locator("#run-banner-error")).to_have_text("Error 400: policy_enforced")
            shoot(page, "policy-enforced-1280-dark")
            page.locator("#run-banner").get_by_role("button", name="Import a Takeout mailbox").click()
            expect(page.locator("#card-import")).to_be_visible()
            expect(page.locator("#card-import")).to_have_class(re.compile("highlight"))
            assert console.problems == []
    finally:
        lock.release()
        close_writer_keeping_sidecars(engine, db_path)
