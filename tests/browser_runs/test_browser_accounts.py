"""The account switcher in Debian's chromium: two databases listed by address, a switch keeps the page's address
with `?account=`, the table and freshness are the other account's, and the first account keeps the hidden senders
this browser remembered before accounts (its localStorage keys), while the second has its own."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.support.browser import new_page, serve, shoot
from tests.support.viewer import SENDERS, make_settings, seed

pytestmark = [pytest.mark.browser]

OTHER = [("carol@other.example", "Carol", 7, 1_650_000_000, 1_700_000_000, 7_000, 1, 0)]


def _address(db: Path, address: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO sync_state (key, value) VALUES ('gmail_address', ?)", (address,))


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    seed(tmp_path / "stats.db")
    seed(tmp_path / "stats.work.db", OTHER)
    _address(tmp_path / "stats.db", "me@example.com")
    _address(tmp_path / "stats.work.db", "me@work.example")
    with serve(make_settings(tmp_path)) as url:
        yield url


def test_the_switcher_keeps_the_url_and_each_accounts_hidden_senders(chromium: Browser, site: str) -> None:
    page, console = new_page(chromium)
    page.goto(site)
    page.evaluate(f"localStorage.setItem('gmail-stats.hidden', {json.dumps(json.dumps(['alice@example.com']))})")
    page.goto(f"{site}/?q=")  # a page address with more in it than the account
    switch = page.locator("#account-switch")
    expect(switch.locator("option")).to_have_text(["me@example.com", "me@work.example (work)", "Add an account…"])
    expect(page.locator("#tile-senders")).to_have_text(str(len(SENDERS) - 1))  # Alice stays hidden (legacy key)
    # One freshness line: when the page read the numbers, then when this account last completed a run.
    expect(page.locator("#freshness")).to_have_text(re.compile(r"^Updated \S.* · last complete run \d+ days ago$"))
    switch.select_option("work")
    page.wait_for_url("**/?q=&account=work")
    expect(page.locator("#rows tr")).to_have_count(1)
    expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "carol@other.example")
    assert page.url.endswith("/?q=&account=work")  # the table wrote its state (#22) and kept the account's
    expect(page.locator("#account-switch")).to_have_value("work")
    assert page.evaluate("localStorage.getItem('gmail-stats.work.hidden')") in (None, "[]")
    shoot(page, "accounts-switcher")
    page.goto(site)
    expect(page.locator("#tile-senders")).to_have_text(str(len(SENDERS) - 1))
    assert console.problems == []
