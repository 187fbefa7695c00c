"""The page in Debian's chromium: onboarding to a filled table, table controls, cancel and resume; no console
errors and no CSP violations. Screenshots of the main states go to tests/artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser_support import Console, browser, serve, shoot
from tests.viewer_support import make_settings, mbox_bytes, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with browser() as instance:
        yield instance


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _page(chromium: Browser, *, width: int = 1280, dark: bool = False) -> tuple[Page, Console]:
    context = chromium.new_context(
        viewport={"width": width, "height": 900 if width > 500 else 844}, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page, Console(page)


def _row_senders(page: Page) -> list[str]:
    return page.locator("#rows tr").evaluate_all("rows => rows.map(r => r.dataset.sender)")


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
        expect(page.locator("#history-list li")).to_have_count(1)
        expect(page.locator("#history-list li").first).to_contain_text("done")
        shoot(page, "table-1280-light")
        page.context.close()
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
            page2.context.close()
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

        page.click("button.sort[data-sort='sender']")
        expect(page.locator("#range")).to_have_text("1\u201325 of 120 senders")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user000@example.com")
        page.click("button.sort[data-sort='sender']")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user119@example.com")

        page.fill("#search", "user05")
        expect(page.locator("#range")).to_have_text("1\u201310 of 10 senders")
        expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "user059@example.com")

        page.locator("#rows tr").first.get_by_role("button", name=re.compile("^Hide")).click()
        expect(page.locator("#rows tr")).to_have_count(9)
        page.reload()  # page size and hidden senders are remembered; the search is not
        expect(page.locator("#rows tr")).to_have_count(25)
        expect(page.locator("#page-size")).to_have_value("25")
        page.fill("#search", "user05")
        expect(page.locator("#rows tr")).to_have_count(9)
        page.check("#show-hidden")
        expect(page.locator("#rows tr.is-hidden")).to_have_count(1)
        page.locator("#rows tr.is-hidden").get_by_role("button", name=re.compile("^Unhide")).click()
        expect(page.locator("#rows tr.is-hidden")).to_have_count(0)
        expect(page.locator("#rows tr")).to_have_count(10)
    assert console.problems == []


def test_cancel_then_resume_from_history(chromium: Browser, tmp_path: Path) -> None:
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(200_000, senders=40, tag="c"))
    with serve(make_settings(tmp_path)) as url:
        page, console = _page(chromium)
        page.goto(url)
        page.click("#start-import")
        page.click("#progress-cancel")
        expect(page.locator("#history-list li").first).to_contain_text("cancelled")
        expect(page.locator("#progress")).to_be_hidden()
        shoot(page, "cancelled-1280-light")
        page.locator("#history-list li").first.get_by_role("button", name="Resume").click()
        expect(page.locator("#history-list li").first).to_contain_text("done", timeout=120_000)
        expect(page.locator("#history-list li")).to_have_count(1)  # resumed in place, not a new run
        expect(page.locator("#tile-messages")).to_have_text("200,000")
    assert console.problems == []
