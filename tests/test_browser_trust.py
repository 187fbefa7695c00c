"""Issue 10's trust bugs of the senders table in Debian's chromium: each scenario runs first on the page before the
fix (asserting the bug is there) and then on today's page (asserting it is gone), with `trust-*-before.png` and
`trust-*-fixed.png` screenshots. Today's page has no console errors and no CSP violations.

One trust bug is not a page state: a search that matches nothing took ~1 s at 150k senders (a full scan of the old
API). Today's API answers it from a trigram index; `bench/bench_viewer.py` measures it at 200k senders."""

from __future__ import annotations

import contextlib
import time

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser_old import Version, open_page, shoot_version, versions
from tests.browser_support import close_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTHS = "ths => ths.map(th => Math.round(th.getBoundingClientRect().width))"


def _table(chromium: Browser, url: str, version: Version, **kwargs: object) -> tuple[Page, list[str]]:
    page, console = open_page(chromium, url, version, **kwargs)  # type: ignore[arg-type]
    page.goto(url)
    expect(page.locator("#rows tr")).to_have_count(50)
    return page, console.problems


@versions
def test_share_bars_are_filled(chromium: Browser, filled: str, version: Version) -> None:
    page, problems = _table(chromium, filled, version)
    fill = page.locator("#rows tr").first.locator(".share-fill").bounding_box()
    assert fill is not None
    if version == "before":
        assert fill["width"] == 0  # an inline <span>: its width is ignored, so the top sender's bar is empty
    else:
        assert fill["width"] > 40
        assert problems == []
    shoot_version(page, "share-bars", version)


@versions
def test_a_late_search_answer_never_replaces_a_newer_one(chromium: Browser, filled: str, version: Version) -> None:
    page, problems = _table(chromium, filled, version)
    held: list[Route] = []
    page.route(lambda u: "q=zzz" in u, lambda route: held.append(route))
    page.fill("#search", "zzz")
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the search was never sent"
    page.fill("#search", "")
    page.wait_for_timeout(1000)  # the answer for the cleared box arrives first
    expect(page.locator("#rows tr")).to_have_count(50)
    for route in held:  # then the slow "matches nothing" answer
        with contextlib.suppress(Exception):  # today's page has aborted it already, which is the point
            route.continue_()
    page.wait_for_timeout(1000)
    expect(page.locator("#search")).to_have_value("")
    if version == "before":
        expect(page.locator("#no-rows")).to_have_text("No sender matches.")
        expect(page.locator("#rows tr")).to_have_count(0)
    else:
        expect(page.locator("#rows tr")).to_have_count(50)
        expect(page.locator("#no-rows")).to_be_hidden()
        assert problems == []
    shoot_version(page, "stale-search", version)


@versions
def test_sender_sort_follows_the_name_and_columns_keep_their_width(
    chromium: Browser, filled: str, version: Version
) -> None:
    page, problems = _table(chromium, filled, version)
    widths = page.locator("thead th").evaluate_all(WIDTHS)
    page.click("#next")
    expect(page.locator("#range")).to_have_text("51\u2013100 of 120 senders")
    paged = page.locator("thead th").evaluate_all(WIDTHS)
    page.locator("thead button.sort").filter(has_text="Sender").click()
    expect(page.locator("#range")).to_have_text("1\u201350 of 120 senders")
    page.wait_for_timeout(500)
    names = page.locator("#rows .who-name").all_text_contents()
    by_name = sorted(names, key=str.lower)
    if version == "before":
        assert names != by_name  # ordered by the address while each row shows the name first
        assert names[0].startswith("Z-person 000")  # user000@… leads
        assert widths != paged  # the columns jump when the page turns
    else:
        expect(page.locator("th[data-col='who']")).to_have_attribute("aria-sort", "ascending")
        assert names == by_name
        assert names[0] == "A-person 025"
        assert [widths, paged] == [page.locator("thead th").evaluate_all(WIDTHS)] * 2
        assert problems == []
    shoot_version(page, "sender-sort", version)


@versions
def test_hidden_senders_leave_totals_and_paging(chromium: Browser, filled: str, version: Version) -> None:
    page, problems = _table(chromium, filled, version)
    first_page = page.locator("#rows tr").evaluate_all("rows => rows.slice(0, 25).map(r => r.dataset.sender)")
    page.evaluate("hidden => localStorage.setItem('gmail-stats.hidden', JSON.stringify(hidden))", first_page)
    page.select_option("#page-size", "25")
    page.reload()
    page.wait_for_timeout(1000)
    if version == "before":  # only the rows of the current page disappear
        expect(page.locator("#range")).to_have_text("1\u201325 of 120 senders")
        expect(page.locator("#no-rows")).to_have_text("Every sender on this page is hidden.")
        expect(page.locator("#tile-senders")).to_have_text("120")
        expect(page.locator("#tile-top")).to_have_text("Z-person 000")  # a hidden sender is "Top sender"
    else:
        expect(page.locator("#range")).to_have_text("1\u201325 of 95 senders")
        expect(page.locator("#rows tr")).to_have_count(25)
        expect(page.locator("#tile-senders")).to_have_text("95")
        expect(page.locator("#tile-top")).to_have_text("A-person 025")
        assert problems == []
    shoot_version(page, "hide", version)
    page.evaluate("localStorage.clear()")


@versions
def test_phone_layout_fits_and_the_detail_view_shows_every_column(
    chromium: Browser, filled: str, version: Version
) -> None:
    for dark in (False, True) if version == "fixed" else (False,):
        page, problems = _table(chromium, filled, version, width=390, dark=dark)
        wide = page.evaluate("document.documentElement.scrollWidth")
        theme = page.locator("#theme").bounding_box()
        assert theme is not None
        small = page.evaluate(
            """() => [...document.querySelectorAll('button, a, select, input')]
                .filter(n => n.offsetParent !== null && !n.closest('.skip-link, .sort, dialog, footer, .steps'))
                .map(n => [n.id || n.textContent.trim().slice(0, 20), n.getBoundingClientRect().height])
                .filter(([, h]) => h < 44)"""
        )
        suffix = "dark" if dark else "light"
        if version == "before":
            # With these 120 senders the old page fits 390 px and shows its whole theme button, so this scenario
            # cannot show the sideways scroll of the screenshot (150k senders); today's half asserts both.
            assert ["theme", 34] in small  # tap targets under 44 px
            assert any(name == "Hide" and height < 30 for name, height in small)
            first = page.locator("#rows tr").first
            expect(first.locator(".col-bytes")).to_be_hidden()  # Size and Last seen cannot be seen at all
            expect(first.locator(".col-date")).to_be_hidden()
            shoot_version(page, "phone", version, full_page=False)
            return
        assert wide <= 390
        assert theme["x"] + theme["width"] <= 390
        assert small == []
        shoot_version(page, f"phone-{suffix}", version, full_page=False)
        page.locator("#table-nav").scroll_into_view_if_needed()
        shoot_version(page, f"phone-table-{suffix}", version, full_page=False)
        page.locator("#rows tr").first.locator("button.who").click()
        dialog = page.locator("#detail")
        expect(dialog).to_be_visible()
        expect(dialog.locator("dt")).to_contain_text(
            ["Messages", "Share of all mail", "Unread", "Size", "First seen", "Last seen"]
        )
        expect(dialog.locator("dd").nth(3)).to_have_text("10.0 KB")
        shoot_version(page, f"phone-detail-{suffix}", version, full_page=False)
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert problems == []
        close_page(page)


def _tabs_to_next(page: Page, *, limit: int = 80) -> int:
    for presses in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == "next":
            return presses
    raise AssertionError(f"Next not reached in {limit} Tab presses")


@versions
def test_accessibility_sort_state_heading_tab_stops_and_quiet_freshness(
    chromium: Browser, filled: str, version: Version
) -> None:
    page, problems = _table(chromium, filled, version)
    sorted_th = page.locator("th[aria-sort='descending']")
    visible_h1 = page.locator("h1:visible")
    live = page.locator("[aria-live]").evaluate_all("nodes => nodes.map(n => n.id)")
    presses = _tabs_to_next(page)
    if version == "before":
        expect(sorted_th).to_have_count(0)  # the sort state sits on the button, not the column header
        expect(page.locator("button.sort[aria-sort='descending']")).to_have_count(1)
        expect(visible_h1).to_have_count(0)
        assert "freshness" in live  # "Updated …" re-announced on every poll
        assert presses > 40, presses
        shoot_version(page, "a11y", version)
        return
    expect(sorted_th).to_have_attribute("data-col", "mails_sent")
    expect(visible_h1).to_have_count(1)
    assert "freshness" not in live
    # Skip link, theme, account switcher, the chart (one stop: arrows pick a month), view tabs, search, presets,
    # "Dates and sizes", rows, Hidden, Kept, Export, Add mail, then Next: no stop per row or per poll.
    assert presses <= 18, presses
    page.keyboard.press("Enter")
    expect(page.locator("#range")).to_have_text("51\u2013100 of 120 senders")
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    shoot_version(page, "a11y", version)
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "table-nav"
    assert problems == []
