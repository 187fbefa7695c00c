"""Keyboard-only use and dark mode of the senders table in Debian's chromium, and a hidden list too long for one
request. Screenshots go to tests/artifacts/keyboard-*.png and dark-*.png; no console errors, no CSP violations."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import new_page, shoot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


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
