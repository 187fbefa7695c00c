"""Issue 10's trust bugs of runs and databases in Debian's chromium: each scenario runs first on the page before the
fix (asserting the bug is there) and then on today's page (asserting it is gone), with `trust-*-before.png` and
`trust-*-fixed.png` screenshots. Today's page has no console errors and no CSP violations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from tests.browser_old import Version, open_page, shoot_version, versions
from tests.browser_support import close_page, many_senders, serve
from tests.viewer_support import make_settings, mbox_bytes, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@versions
def test_history_says_what_each_run_did_and_offers_one_action(chromium: Browser, filled: str, version: Version) -> None:
    page, console = open_page(chromium, filled, version)
    page.goto(filled)
    runs = page.locator("#history-list > li")
    expect(runs).to_have_count(4)
    cancelled, failed_scan, partial, complete = (runs.nth(i) for i in range(4))
    listed = page.locator("#history-list")
    if version == "before":
        # No Log here: the old page offers it only for runs it started (the log test below starts one).
        expect(partial.get_by_role("button", name="Resume")).to_be_visible()  # resuming a finished run
        expect(failed_scan).to_contain_text("partial")  # a scan that counted nothing
        expect(failed_scan.get_by_role("button", name="Retry")).to_be_visible()
        expect(listed.get_by_role("button", name="Start again")).to_have_count(2)  # and "Start again", for the same
        expect(partial).to_contain_text("2 warnings")
        expect(page.locator(".warnings li")).to_have_count(0)  # nowhere to read them
        shoot_version(page, "history", version)
        return
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
    shoot_version(page, "history", version)
    assert console.problems == []


@versions
def test_a_too_new_database_says_so_instead_of_zero(
    chromium: Browser, tmp_path: Path, db_path: Path, version: Version
) -> None:
    seed(db_path, many_senders(5))
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        conn.execute(text("PRAGMA user_version = 99"))
    close_writer_keeping_sidecars(engine, db_path)
    with serve(make_settings(tmp_path)) as url:
        page, console = open_page(chromium, url, version)
        page.goto(url)
        if version == "before":
            expect(page.locator("#stats")).to_be_visible()
            page.wait_for_timeout(1500)  # several polls: it never gets better
            expect(page.locator("#tile-messages")).to_have_text("0")
            expect(page.locator("#tile-senders")).to_have_text("0")
            expect(page.locator("#rows tr")).to_have_count(0)
        else:
            expect(page.locator("#db-problem")).to_be_visible()
            expect(page.locator("#db-problem-title")).to_have_text("This database was written by a newer gmail-stats.")
            expect(page.locator("#stats")).to_be_hidden()
            expect(page.locator("#onboarding")).to_be_hidden()
            assert console.problems == []
        shoot_version(page, "too-new", version)
        close_page(page)


@versions
def test_an_unreadable_database_says_so_in_words(
    chromium: Browser, tmp_path: Path, db_path: Path, version: Version
) -> None:
    db_path.write_bytes(b"this is not a database" * 1000)
    with serve(make_settings(tmp_path)) as url:
        page, console = open_page(chromium, url, version)
        page.goto(url)
        if version == "before":
            expect(page.locator("#notice")).to_contain_text("`gmail-stats runs --verbose --db ")  # Markdown shown as is
        else:
            expect(page.locator("#db-problem-title")).to_have_text("The database file could not be read.")
            expect(page.locator("#db-problem-text code")).to_have_text(f"gmail-stats runs --verbose --db {db_path}")
            expect(page.locator("#db-problem-text")).not_to_contain_text("`")
            expect(page.locator("#notice")).to_be_hidden()
            # A 503 the page explains is logged by chromium as a failed resource; nothing else may be.
            assert [p for p in console.problems if "status of 503" not in p] == []
        shoot_version(page, "corrupt", version)
        close_page(page)


@versions
def test_errors_stay_beside_the_action_and_a_cancelled_import_says_it_is_partial(
    chromium: Browser, tmp_path: Path, version: Version
) -> None:
    with serve(make_settings(tmp_path)) as url:  # no import folder yet
        page, console = open_page(chromium, url, version)
        page.goto(url)
        missing = page.locator("#import-empty")
        if version == "before":
            expect(missing).to_have_text("No .mbox file in the import folder yet.")  # there is no folder at all
        else:
            expect(missing).to_contain_text("does not exist")
        shoot_version(page, "missing-folder", version)
        (tmp_path / "imports").mkdir()
        (tmp_path / "imports" / "notmail.mbox").write_bytes(b"hello, not an mbox\n")
        (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(120_000, senders=40, tag="c"))
        page.click("#refresh-imports")
        page.select_option("#import-file", "notmail.mbox")
        page.click("#start-import")
        shown = page.locator("#notice" if version == "before" else "#import-message .message")
        expect(shown).to_contain_text("not an mbox file")
        page.wait_for_timeout(3500)  # several polls later
        if version == "before":
            expect(shown).to_be_hidden()  # erased: nothing says why the import did not start
            expect(page.locator("text=not an mbox file >> visible=true")).to_have_count(0)
        else:
            expect(shown).to_be_visible()  # still there, beside the button
            assert shown.bounding_box() is not None
        shoot_version(page, "launch-error", version)
        if version == "fixed":
            shown.get_by_role("button", name="Dismiss").click()
            expect(shown).to_have_count(0)

        page.select_option("#import-file", "big.mbox")
        page.click("#start-import")
        if version == "fixed":
            expect(page.locator("#start-import")).to_have_attribute("aria-busy", "true")  # busy at once
        cancel = page.locator("#progress-cancel")
        expect(cancel).to_be_visible()
        while int(page.get_attribute("#progress-bar", "aria-valuenow") or 0) < 10:
            page.wait_for_timeout(100)
        cancel.click()
        if version == "before":
            expect(cancel).to_be_enabled(timeout=1500)  # clickable again while the run goes on
            expect(page.locator("#progress-chip")).to_have_text(re.compile("^running$", re.IGNORECASE))
        else:
            expect(cancel).to_be_disabled()  # disabled at once, not after ~3 s
            expect(cancel).to_have_text("Cancelling…")
        shoot_version(page, "cancelling", version)

        first_run = page.locator("#history-list > li").first
        expect(first_run).to_contain_text(re.compile("cancelled", re.IGNORECASE))
        if version == "before":
            page.wait_for_timeout(1500)
            expect(page.locator("#progress")).to_be_hidden()  # panel and pill gone: it looks finished
            expect(page.locator("#pill")).to_be_hidden()
            expect(first_run).not_to_be_in_viewport()  # the only trace is a card far down the page
            shoot_version(page, "cancelled", version)
            return
        banner = page.locator("#run-banner")
        expect(banner).to_be_visible()
        expect(page.locator("#run-banner-title")).to_have_text(
            re.compile(r"^Import stopped at \d+% — counts are partial\.$")
        )
        expect(page.locator("#pill")).to_have_text("Last run cancelled")
        shoot_version(page, "cancelled", version)
        first_run.get_by_role("button", name="Log").click()
        expect(page.locator("#history-log")).to_contain_text("--resume")  # the ingester's own resume hint
        banner.get_by_role("button", name="Resume").click()
        expect(first_run).to_contain_text("done", timeout=120_000)
        expect(banner).to_be_hidden()
        expect(page.locator("#history-list > li")).to_have_count(1)  # resumed in place
        expect(page.locator("#tile-messages")).to_have_text("120,000")
        assert console.problems == []


@versions
def test_the_log_of_a_run_shows_its_warnings(chromium: Browser, tmp_path: Path, version: Version) -> None:
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "odd.mbox").write_bytes(
        b"From a@b Fri Dec 04 20:33:24 +0000 2020\nFrom: a@example.com\nDate: not a date\n\nbody\n"
    )
    with serve(make_settings(tmp_path)) as url:
        page, console = open_page(chromium, url, version)
        page.goto(url)
        page.select_option("#import-file", "odd.mbox")
        page.click("#start-import")
        first_run = page.locator("#history-list > li").first
        expect(first_run).to_contain_text("1 warning")
        first_run.get_by_role("button", name="Log").click()
        log = page.locator("#history-log")
        if version == "before":
            expect(log).to_contain_text("(no output")  # while /api/runs has the warning
        else:
            expect(log).to_contain_text("Date header unreadable")
            assert console.problems == []
        shoot_version(page, "log", version)
