"""Issue 10's trust bugs of runs and databases in Debian's chromium: each scenario asserts today's page does not
have the bug, with a `trust-*.png` screenshot, no console errors and no CSP violations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from tests.support.browser import close_page, many_senders, new_page, serve, shoot
from tests.support.viewer import make_settings, mbox_bytes, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_history_says_what_each_run_did_and_offers_one_action(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    runs = page.locator("#history-list > li")
    expect(runs).to_have_count(4)
    cancelled, failed_scan, partial, complete = (runs.nth(i) for i in range(4))
    listed = page.locator("#history-list")
    # The bugs: Resume offered on a finished run, a scan that counted nothing called partial with both Retry and
    # "Start again", and warnings counted with nowhere to read them.
    expect(cancelled).to_contain_text("stopped at 47%")
    expect(cancelled.get_by_role("button", name="Resume")).to_be_visible()
    expect(failed_scan).to_contain_text("nothing counted")
    expect(failed_scan).not_to_contain_text("partial")
    expect(failed_scan.get_by_role("button")).to_have_text(["Start again"])
    expect(partial.get_by_role("button", name="Resume")).to_have_count(0)  # finished: resuming changes nothing
    expect(complete.get_by_role("button")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(listed.get_by_role("button", name="Start again")).to_have_count(1)
    partial.locator("summary").click()
    expect(partial.locator(".warnings li")).to_have_text(
        ["byte 1234: a header line has no colon", "byte 99871: message without From"]
    )
    partial.get_by_role("button", name="Log").click()
    expect(page.locator("#history-log")).to_contain_text("byte 99871: message without From")
    expect(page.locator("#history-log")).not_to_contain_text("no output")
    # The newest run stopped early: the banner at the top says so, with the same single action.
    expect(page.locator("#run-banner-title")).to_have_text("Import stopped at 47% — counts are partial.")
    expect(page.locator("#run-banner").get_by_role("button", name="Resume")).to_be_visible()
    shoot(page, "trust-history")
    assert console.problems == []


def test_a_too_new_database_says_so_instead_of_zero(chromium: Browser, tmp_path: Path, db_path: Path) -> None:
    seed(db_path, many_senders(5))
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        conn.execute(text("PRAGMA user_version = 99"))
    close_writer_keeping_sidecars(engine, db_path)
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        # The bug: zero messages and zero senders, for ever.
        expect(page.locator("#db-problem")).to_be_visible()
        expect(page.locator("#db-problem-title")).to_have_text("This database was written by a newer gmail-stats.")
        expect(page.locator("#stats")).to_be_hidden()
        expect(page.locator("#onboarding")).to_be_hidden()
        assert console.problems == []
        shoot(page, "trust-too-new")
        close_page(page)


def test_an_unreadable_database_says_so_in_words(chromium: Browser, tmp_path: Path, db_path: Path) -> None:
    db_path.write_bytes(b"this is not a database" * 1000)
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        # The bug: a notice showing its Markdown as is.
        expect(page.locator("#db-problem-title")).to_have_text("The database file could not be read.")
        expect(page.locator("#db-problem-text code")).to_have_text(f"gmail-stats runs --verbose --db {db_path}")
        expect(page.locator("#db-problem-text")).not_to_contain_text("`")
        expect(page.locator("#notice")).to_be_hidden()
        # A 503 the page explains is logged by chromium as a failed resource; nothing else may be.
        assert [p for p in console.problems if "status of 503" not in p] == []
        shoot(page, "trust-corrupt")
        close_page(page)


def test_errors_stay_beside_the_action_and_a_cancelled_import_says_it_is_partial(
    chromium: Browser, tmp_path: Path
) -> None:
    with serve(make_settings(tmp_path)) as url:  # no import folder yet
        page, console = new_page(chromium)
        page.goto(url)
        # The bug: "No .mbox file in the import folder yet." where there is no folder at all.
        expect(page.locator("#import-empty")).to_contain_text("does not exist")
        shoot(page, "trust-missing-folder")
        (tmp_path / "imports").mkdir()
        (tmp_path / "imports" / "notmail.mbox").write_bytes(b"hello, not an mbox\n")
        (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(120_000, senders=40, tag="c"))
        page.click("#refresh-imports")
        page.select_option("#import-file", "notmail.mbox")
        page.click("#start-import")
        shown = page.locator("#import-message .message")
        expect(shown).to_contain_text("not an mbox file")
        # The bug: the next poll erased it, so nothing said why the import did not start. Three polls later:
        for _ in range(3):
            with page.expect_response(lambda response: "/api/status" in response.url):
                pass
        expect(shown).to_be_visible()  # still there, beside the button
        assert shown.bounding_box() is not None
        shoot(page, "trust-launch-error")
        shown.get_by_role("button", name="Dismiss").click()
        expect(shown).to_have_count(0)

        page.select_option("#import-file", "big.mbox")
        page.click("#start-import")
        expect(page.locator("#start-import")).to_have_attribute("aria-busy", "true")  # busy at once
        cancel = page.locator("#progress-cancel")
        expect(cancel).to_be_visible()
        page.wait_for_function(
            "() => Number(document.getElementById('progress-bar').getAttribute('aria-valuenow')) >= 10"
        )
        cancel.click()
        expect(cancel).to_be_disabled()  # disabled at once (the bug: clickable again while the run went on)
        expect(cancel).to_have_text("Cancelling…")
        shoot(page, "trust-cancelling")

        first_run = page.locator("#history-list > li").first
        expect(first_run).to_contain_text(re.compile("cancelled", re.IGNORECASE))
        # The bug: panel and pill gone, so it looked finished; the only trace a card far down the page.
        banner = page.locator("#run-banner")
        expect(banner).to_be_visible()
        expect(page.locator("#run-banner-title")).to_have_text(
            re.compile(r"^Import stopped at \d+% — counts are partial\.$")
        )
        expect(page.locator("#pill")).to_have_text("Last run cancelled")
        shoot(page, "trust-cancelled")
        first_run.get_by_role("button", name="Log").click()
        expect(page.locator("#history-log")).to_contain_text("--resume")  # the ingester's own resume hint
        banner.get_by_role("button", name="Resume").click()
        expect(first_run).to_contain_text("done", timeout=120_000)
        expect(banner).to_be_hidden()
        expect(page.locator("#history-list > li")).to_have_count(1)  # resumed in place
        expect(page.locator("#tile-messages")).to_have_text("120,000")
        assert console.problems == []


def test_the_log_of_a_run_shows_its_warnings(chromium: Browser, tmp_path: Path) -> None:
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "odd.mbox").write_bytes(
        b"From a@b Fri Dec 04 20:33:24 +0000 2020\nFrom: a@example.com\nDate: not a date\n\nbody\n"
    )
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        page.select_option("#import-file", "odd.mbox")
        page.click("#start-import")
        first_run = page.locator("#history-list > li").first
        expect(first_run).to_contain_text("1 warning")
        first_run.get_by_role("button", name="Log").click()
        log = page.locator("#history-log")
        expect(log).to_contain_text("Date header unreadable")  # the bug: "(no output" while /api/runs had it
        assert console.problems == []
        shoot(page, "trust-log")
