"""Finding what to act on (#22), in Debian's chromium at 1440 and 390 px: the "Silent 2 years" and "New this year"
presets, the size filter, the unread-count sort, a chart bar (reached by keyboard) narrowing the table to its month
with a removable chip, all kept in the page address across a reload; the Domains view exports domains.
Screenshots: tests/artifacts/find-*.png."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import new_page, serve, shoot
from tests.support.viewer import make_settings, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OLD = 1_580_515_200  # 2020-02-01: the chart's first month
NOW = int(time.time())
RECENT = NOW - 30 * 86_400
YEARS_AGO = NOW - 4 * 365 * 86_400
# sender, name, count, first, last, bytes, unread, list_unsubscribe
ROWS: list[tuple[Any, ...]] = [
    ("busy@news.example", "Busy News", 40, YEARS_AGO, RECENT, 40_000, 2, 0),
    ("quiet@old.example", "Quiet Old", 6, OLD, OLD, 600, 6, 0),  # silent since 2020, all unread
    ("gone@old.example", "Gone Old", 3, OLD, YEARS_AGO, 300, 1, 0),  # silent for 4 years
    ("new@fresh.example", "Fresh", 5, RECENT, RECENT, 50_000_000, 0, 0),  # new, 10 MB a message
    ("friend@example.org", "A Friend", 8, YEARS_AGO, RECENT, 800, 5, 0),
]


@pytest.fixture
def site(tmp_path: Path, db_path: Path) -> Iterator[str]:
    seed(db_path, ROWS)
    with serve(make_settings(tmp_path)) as url:
        yield url


def _shown(page: Page) -> list[str]:
    return [str(s) for s in page.locator("#rows tr").evaluate_all("rows => rows.map(r => r.dataset.sender)")]


def _address(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


@pytest.mark.parametrize("width", [1440, 390])
def test_find_by_dates_sizes_unread_and_month(chromium: Browser, site: str, width: int) -> None:
    page, console = new_page(chromium, width=width)
    page.goto(site)
    expect(page.locator("#rows tr")).to_have_count(5)

    page.locator("button.preset[data-preset=silent]").click()  # last mail over 2 years ago, longest silent first
    expect(page.locator("#range")).to_have_text("1\u20132 of 2 senders")
    assert _shown(page) == ["quiet@old.example", "gone@old.example"]
    assert _address(page) == {"preset": ["silent"], "sort": ["last_seen"], "order": ["asc"]}
    page.reload()  # the address keeps it
    expect(page.locator("button.preset[data-preset=silent]")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#range")).to_have_text("1\u20132 of 2 senders")
    assert _shown(page) == ["quiet@old.example", "gone@old.example"]

    page.locator("button.preset[data-preset=fresh]").click()  # first mail in the last 12 months
    expect(page.locator("#range")).to_have_text("1\u20131 of 1 sender")
    assert _shown(page) == ["new@fresh.example"]

    page.locator("button.preset[data-preset=all]").click()
    page.locator("#find-more summary").click()
    page.locator("#find-min-avg-kb").fill("1024")  # an average message of 1 MB or more
    page.locator("#find-min-avg-kb").press("Enter")
    expect(page.locator("#range")).to_have_text("1\u20131 of 1 sender")
    assert _address(page)["min_avg_bytes"] == [str(1024 * 1024)]
    page.locator("#find-clear").click()
    expect(page.locator("#range")).to_have_text("1\u20135 of 5 senders")

    page.locator("th[data-col=unread] button[data-sort=unread]").click()  # unread messages, most first
    expect(page.locator("th[data-col=unread]")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "quiet@old.example")
    assert _shown(page) == [
        "quiet@old.example",
        "friend@example.org",
        "busy@news.example",
        "gone@old.example",
        "new@fresh.example",
    ]

    # The chart by keyboard: its one Tab stop is the newest month; Home goes to the first, Enter picks it.
    newest = page.locator("#chart-all .bar-pick[tabindex='0']")
    newest.focus()
    newest.press("Home")
    first = page.locator("#chart-all .bar-pick").first
    expect(first).to_be_focused()
    first.press("Enter")
    expect(page.locator("#month-filter")).to_contain_text("Mail in Feb 2020")
    expect(page.locator("#range")).to_have_text("1\u20132 of 2 senders")
    assert sorted(_shown(page)) == ["gone@old.example", "quiet@old.example"]
    assert _address(page)["month"] == ["2020-02"]
    shoot(page, f"find-month-{width}", full_page=False)
    page.reload()
    expect(page.locator("#month-filter")).to_contain_text("Mail in Feb 2020")
    expect(page.locator("#range")).to_have_text("1\u20132 of 2 senders")
    clear = page.locator("#month-filter button")
    clear.focus()
    clear.press("Enter")
    expect(page.locator("#month-filter")).to_have_count(0)
    expect(page.locator("#range")).to_have_text("1\u20135 of 5 senders")
    assert "month" not in _address(page)
    assert console.problems == []


def test_domains_view_exports_domains(chromium: Browser, site: str) -> None:
    page, console = new_page(chromium, width=1440)
    page.goto(site)
    expect(page.locator("#rows tr")).to_have_count(5)
    page.locator("#view-domains").click()
    expect(page.locator("#range")).to_have_text("1\u20134 of 4 domains")
    expect(page.locator("#find-more")).to_be_hidden()
    with page.expect_download() as info:
        page.locator("#export").click()
    assert info.value.suggested_filename == "gmail-stats-domains.csv"
    lines = Path(info.value.path()).read_text().splitlines()
    assert lines[0].startswith("domain,senders,mails_sent,")
    assert [line.split(",")[0] for line in lines[1:]] == ["news.example", "old.example", "example.org", "fresh.example"]
    assert _address(page) == {"view": ["domains"]}
    assert console.problems == []
