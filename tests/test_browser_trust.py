"""Issue 10's trust bugs in Debian's chromium, each asserted fixed, with a `trust-*-fixed.png` screenshot beside the
`trust-*-before.png` that `python -m tests.browser_before` takes of the old page. No console errors, no CSP
violations."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from tests.browser_support import (
    browser,
    many_senders,
    new_page,
    seed_history,
    serve,
    shoot,
)
from tests.viewer_support import make_settings, mbox_bytes, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with browser() as instance:
        yield instance


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=20_000)


@pytest.fixture
def filled(tmp_path: Path, db_path: Path) -> Iterator[str]:
    seed(db_path, many_senders())
    seed_history(db_path)
    with serve(make_settings(tmp_path)) as url:
        yield url


def test_share_bars_are_filled_and_columns_keep_their_width(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    fill = page.locator("#rows tr").first.locator(".share-fill").bounding_box()
    assert fill is not None and fill["width"] > 40  # the top row's bar is full, not an empty inline span
    widths = page.locator("#head th").evaluate_all("ths => ths.map(th => Math.round(th.getBoundingClientRect().width))")
    page.click("#next")
    expect(page.locator("#range")).to_have_text("51\u2013100 of 120 senders")
    page.click("button.sort[data-sort='bytes']")
    expect(page.locator("#range")).to_have_text("1\u201350 of 120 senders")
    after = page.locator("#head th").evaluate_all("ths => ths.map(th => Math.round(th.getBoundingClientRect().width))")
    assert after == widths
    shoot(page, "trust-share-bars-fixed")
    assert console.problems == []


def test_a_late_search_answer_never_replaces_a_newer_one(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    held: list[Route] = []
    page.route(lambda u: "q=zzz" in u, lambda route: held.append(route))
    page.fill("#search", "zzz")
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the search was never sent"
    page.fill("#search", "")
    expect(page.locator("#rows tr")).to_have_count(50)
    for route in held:  # the slow "matches nothing" answer arrives last
        with contextlib.suppress(Exception):  # the page may have aborted it already, which is the point
            route.fulfill(status=200, content_type="application/json", body='{"total":0,"senders":[]}')
    page.wait_for_timeout(500)
    expect(page.locator("#rows tr")).to_have_count(50)
    expect(page.locator("#no-rows")).to_be_hidden()
    shoot(page, "trust-stale-search-fixed")
    assert console.problems == []


def test_history_says_what_each_run_did_and_offers_one_action(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    runs = page.locator("#history-list > li")
    expect(runs).to_have_count(4)
    cancelled, failed_scan, partial, complete = (runs.nth(i) for i in range(4))
    expect(cancelled).to_contain_text("stopped at 47%")
    expect(cancelled.get_by_role("button", name="Resume")).to_be_visible()
    expect(failed_scan).to_contain_text("nothing counted")
    expect(failed_scan).not_to_contain_text("partial")
    expect(failed_scan.get_by_role("button")).to_have_text(["Start again"])
    expect(partial.get_by_role("button", name="Resume")).to_have_count(0)  # finished: resuming changes nothing
    expect(complete.get_by_role("button")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.locator("#history-list").get_by_role("button", name="Start again")).to_have_count(1)
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
    shoot(page, "trust-history-fixed")
    assert console.problems == []


def test_sender_sort_shows_what_it_sorts_by(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    expect(page.locator("th[data-col='mails_sent']")).to_have_attribute("aria-sort", "descending")
    page.click("th[data-col='who'] button.sort")
    expect(page.locator("th[data-col='who']")).to_have_attribute("aria-sort", "ascending")
    expect(page.locator("th[data-col='mails_sent']")).to_have_attribute("aria-sort", "none")
    names = page.locator("#rows .who-name").all_text_contents()
    assert names == sorted(names, key=str.lower)  # what each row shows first is what the order follows
    assert names[0] in ("A-person 025", "user000@news0.example.com")  # by name, or by address on an older API
    shoot(page, "trust-sender-sort-fixed")
    assert console.problems == []


def test_accessibility_heading_skip_link_tab_stops_and_quiet_freshness(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    expect(page.locator("h1")).to_have_count(1)
    assert page.locator("#freshness").get_attribute("aria-live") is None
    assert page.locator("[aria-live]").count() == 0 or "freshness" not in page.locator("[aria-live]").evaluate_all(
        "nodes => nodes.map(n => n.id).join()"
    )
    presses = 0
    while presses < 40:
        page.keyboard.press("Tab")
        presses += 1
        if page.evaluate("document.activeElement && document.activeElement.id") == "next":
            break
    assert presses <= 15, presses
    page.keyboard.press("Enter")
    expect(page.locator("#range")).to_have_text("51\u2013100 of 120 senders")
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    shoot(page, "trust-a11y-skip-link-fixed")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "table-nav"
    assert console.problems == []


def test_phone_layout_fits_and_the_detail_view_shows_every_column(chromium: Browser, filled: str) -> None:
    for dark in (False, True):
        page, console = new_page(chromium, width=390, dark=dark)
        page.goto(filled)
        expect(page.locator("#rows tr")).to_have_count(50)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        theme = page.locator("#theme").bounding_box()
        assert theme is not None and theme["x"] + theme["width"] <= 390
        small = page.evaluate(
            """() => [...document.querySelectorAll('button, a, select, input')]
                .filter(n => n.offsetParent !== null && !n.closest('.skip-link, .sort, dialog, footer, .steps'))
                .map(n => [n.id || n.textContent.trim().slice(0, 20), n.getBoundingClientRect().height])
                .filter(([, h]) => h < 44)"""
        )
        assert small == []
        suffix = "dark" if dark else "light"
        shoot(page, f"trust-phone-{suffix}-fixed", full_page=False)
        page.locator("#table-nav").scroll_into_view_if_needed()
        shoot(page, f"trust-phone-table-{suffix}-fixed", full_page=False)
        page.locator("#rows tr").first.locator("button.who").click()
        dialog = page.locator("#detail")
        expect(dialog).to_be_visible()
        expect(dialog.locator("dt")).to_contain_text(
            ["Messages", "Share of all mail", "Unread", "Size", "First seen", "Last seen"]
        )
        expect(dialog.locator("dd").nth(3)).to_have_text("10.0 KB")
        shoot(page, f"trust-phone-detail-{suffix}-fixed", full_page=False)
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert console.problems == []
        page.context.close()


def test_a_too_new_or_unreadable_database_says_so_instead_of_zero(
    chromium: Browser, tmp_path: Path, db_path: Path
) -> None:
    seed(db_path, many_senders(5))
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        conn.execute(text("PRAGMA user_version = 99"))
    close_writer_keeping_sidecars(engine, db_path)
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#db-problem")).to_be_visible()
        expect(page.locator("#db-problem-title")).to_have_text("This database was written by a newer gmail-stats.")
        expect(page.locator("#stats")).to_be_hidden()
        expect(page.locator("#onboarding")).to_be_hidden()
        shoot(page, "trust-too-new-fixed")
        assert console.problems == []
        page.context.close()
    for sidecar in tmp_path.glob("stats.db*"):
        sidecar.unlink()
    db_path.write_bytes(b"this is not a database" * 1000)
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#db-problem-title")).to_have_text("The database file could not be read.")
        expect(page.locator("#db-problem-text code")).to_have_text("gmail-stats runs")
        expect(page.locator("#db-problem-text")).not_to_contain_text("`")
        expect(page.locator("#notice")).to_be_hidden()
        shoot(page, "trust-corrupt-fixed")
        # A 503 the page explains is logged by chromium as a failed resource; nothing else may be.
        assert [p for p in console.problems if "status of 503" not in p] == []


def test_errors_stay_beside_the_action_and_a_cancelled_import_says_it_is_partial(
    chromium: Browser, tmp_path: Path
) -> None:
    with serve(make_settings(tmp_path)) as url:  # no import folder yet
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#import-empty")).to_contain_text("does not exist")
        shoot(page, "trust-missing-folder-fixed")
        (tmp_path / "imports").mkdir()
        (tmp_path / "imports" / "notmail.mbox").write_bytes(b"hello, not an mbox\n")
        (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(120_000, senders=40, tag="c"))
        page.click("#refresh-imports")
        page.select_option("#import-file", "notmail.mbox")
        page.click("#start-import")
        message = page.locator("#import-message .message")
        expect(message).to_contain_text("not an mbox file")
        page.wait_for_timeout(3500)  # several polls later it is still there, beside the button
        expect(message).to_be_visible()
        assert message.bounding_box() is not None
        shoot(page, "trust-launch-error-fixed")
        message.get_by_role("button", name="Dismiss").click()
        expect(message).to_have_count(0)

        page.select_option("#import-file", "big.mbox")
        page.click("#start-import")
        expect(page.locator("#start-import")).to_have_attribute("aria-busy", "true")  # busy at once
        expect(page.locator("#progress-cancel")).to_be_visible()
        while int(page.get_attribute("#progress-bar", "aria-valuenow") or 0) < 10:
            page.wait_for_timeout(100)
        page.click("#progress-cancel")
        expect(page.locator("#progress-cancel")).to_be_disabled()  # disabled at once, not after ~3 s
        expect(page.locator("#progress-cancel")).to_have_text("Cancelling…")
        shoot(page, "trust-cancelling-fixed")
        banner = page.locator("#run-banner")
        expect(banner).to_be_visible()
        expect(page.locator("#run-banner-title")).to_have_text(
            re.compile(r"^Import stopped at \d+% — counts are partial\.$")
        )
        expect(page.locator("#pill")).to_have_text("Last run cancelled")
        shoot(page, "trust-cancelled-fixed")
        page.locator("#history-list > li").first.get_by_role("button", name="Log").click()
        expect(page.locator("#history-log")).to_contain_text("--resume")  # the ingester's own resume hint
        resume = banner.get_by_role("button", name="Resume")
        resume.click()
        expect(page.locator("#history-list > li").first).to_contain_text("done", timeout=120_000)
        expect(banner).to_be_hidden()
        expect(page.locator("#history-list > li")).to_have_count(1)  # resumed in place
        expect(page.locator("#tile-messages")).to_have_text("120,000")
        assert console.problems == []


def _tab_to(page: Page, selector: str, *, limit: int = 60) -> int:
    """Presses Tab until the focused element matches `selector`; returns the number of presses."""
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement && document.activeElement.matches({selector!r})"):
            return presses
    raise AssertionError(f"{selector} not reached in {limit} Tab presses")


def test_keyboard_only_use_and_dark_mode(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    _tab_to(page, "#theme")
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("#theme")).to_have_attribute("aria-pressed", "true")
    _tab_to(page, "#search")
    page.keyboard.type("person 00")
    expect(page.locator("#range")).to_have_text("1\u201310 of 10 senders")
    _tab_to(page, "button.preset[data-preset='largest']")
    page.keyboard.press("Enter")
    expect(page.locator("th[data-col='bytes']")).to_have_attribute("aria-sort", "descending")
    _tab_to(page, "#rows tr:first-child button.who")
    page.keyboard.press("Enter")
    expect(page.locator("#detail")).to_be_visible()
    expect(page.locator("#detail-title")).to_have_text("Q-person 009")
    shoot(page, "keyboard-detail-1440-dark", full_page=False)
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()
    assert page.evaluate("document.activeElement.closest('tr').dataset.sender") == "user009@mail2.example.com"
    _tab_to(page, "#rows tr:first-child button.hide-button")
    page.keyboard.press("Enter")
    expect(page.locator("#rows tr")).to_have_count(9)  # totals and paging: test_browser_features.py
    expect(page.locator("#undo")).to_be_visible()
    shoot(page, "keyboard-hidden-1440-dark")
    expect(page.locator("#undo-button")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#rows tr")).to_have_count(10)
    page.reload()  # the theme is remembered
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    shoot(page, "dark-1440")
    assert console.problems == []


def test_many_hidden_senders_never_break_the_table(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    page.evaluate(
        "localStorage.setItem('gmail-stats.hidden', JSON.stringify(["
        "...Array.from({length: 400}, (_, i) => `someone-${i}@a-rather-long-domain-name.example.com`),"
        "'user000@news0.example.com']))"
    )
    page.reload()
    # Sent as one registered set (`hidden=`), not 401 `exclude=` values: the request stays small, and they all
    # leave the totals and paging (only one of them is in this database).
    expect(page.locator("#range")).to_have_text("1\u201350 of 119 senders")
    expect(page.locator("#rows tr")).to_have_count(50)
    expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user001@mail1.example.com")
    expect(page.locator("#table-message")).to_have_text("")
    expect(page.locator("#hidden-count")).to_have_text("401")
    assert console.problems == []
