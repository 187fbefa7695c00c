"""Issue 10's new page features in Debian's chromium against a real import: Unread % and First seen columns,
Gmail and unsubscribe links, the By-domain view, the volume chart, presets, hiding with undo, dark mode and
keyboard-only use. Screenshots go to tests/artifacts/features-*.png; no console errors, no CSP violations."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import close_page, feature_mbox, new_page, serve, shoot
from tests.support.importing import import_file
from tests.support.viewer import make_settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TOTAL = 139  # messages in feature_mbox()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("features")
    (tmp / "imports").mkdir()
    mbox = tmp / "imports" / "features.mbox"
    mbox.write_bytes(feature_mbox())
    import_file(tmp / "stats.db", mbox)
    with serve(make_settings(tmp)) as url:
        yield url


def _senders(page: Page) -> list[str]:
    return [str(s) for s in page.locator("#rows tr").evaluate_all("rows => rows.map(r => r.dataset.sender)")]


def _open(chromium: Browser, url: str, **kwargs: object) -> tuple[Page, list[str]]:
    page, console = new_page(chromium, **kwargs)  # type: ignore[arg-type]
    page.goto(url)
    expect(page.locator("#rows tr").first).to_be_visible()
    return page, console.problems


def test_unread_first_seen_and_links(chromium: Browser, imported: str) -> None:
    page, problems = _open(chromium, imported)
    expect(page.locator("#tile-messages")).to_have_text(str(TOTAL))
    page.click("button.sort[data-sort='unread_ratio']")
    expect(page.locator("th[data-col='unread']")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#rows tr").first).to_have_attribute("data-sender", "rare@once.example.net")
    mostly = page.locator("#rows td.mostly-unread")
    expect(mostly).to_have_count(4)  # shop news, shop deals, digest, rare: 80% or more unread
    news = page.locator("#rows tr[data-sender='news@shop.example.com']")
    expect(news.locator("td.col-unread")).to_have_text("92%")
    expect(news.locator("td.col-first")).not_to_have_text("\u2013")
    gmail = news.get_by_role("link", name=re.compile("in Gmail"))
    expect(gmail).to_have_attribute("href", re.compile(r"^https://mail\.google\.com/"))
    expect(gmail).to_have_attribute("rel", "noopener noreferrer")
    unsubscribe = news.get_by_role("link", name=re.compile("^Unsubscribe"))
    expect(unsubscribe).to_have_attribute("href", "https://shop.example.com/unsub?u=1")
    expect(unsubscribe).to_have_attribute("rel", "noopener noreferrer")
    alice = page.locator("#rows tr[data-sender='alice@friends.example.org']")
    expect(alice.get_by_role("link", name=re.compile("^Unsubscribe"))).to_have_count(0)
    page.click("button.sort[data-sort='first_seen']")
    expect(page.locator("th[data-col='first_seen']")).to_have_attribute("aria-sort", "descending")
    shoot(page, "features-columns-1440-light")
    assert problems == []


def test_domain_view_and_its_detail(chromium: Browser, imported: str) -> None:
    page, problems = _open(chromium, imported)
    page.click("#view-domains")
    expect(page.locator("#view-domains")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#rows tr[data-domain]")).to_have_count(4)  # .com, .org, .co.uk, .net
    expect(page.locator("#range")).to_have_text("1\u20134 of 4 domains")
    shop = page.locator("#rows tr[data-domain='example.com']")
    expect(shop.locator("td.col-count").nth(0)).to_have_text("2")  # two senders
    expect(shop.locator("td.col-count").nth(1)).to_have_text("80")
    digest = page.locator("#rows tr[data-domain='example.co.uk']")  # public-suffix aware
    expect(digest).to_have_count(1)
    shoot(page, "features-domains-1440-light")
    shop.locator("button.who").click()
    dialog = page.locator("#detail")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#detail-chart rect.bar-rect").first).to_be_visible()
    expect(dialog.locator("#detail-chart")).to_have_attribute("data-total", "80")
    expect(dialog.get_by_role("link", name="Open in Gmail")).to_have_attribute("rel", "noopener noreferrer")
    shoot(page, "features-domain-detail-1440-light", full_page=False)
    dialog.get_by_role("button", name="Show its senders").click()
    expect(page.locator("#domain-filter")).to_contain_text("example.com")
    expect(page.locator("#rows tr")).to_have_count(2)
    page.locator("#domain-filter").get_by_role("button").click()
    expect(page.locator("#rows tr")).to_have_count(6)
    assert problems == []


def test_volume_chart_all_mail_and_per_sender(chromium: Browser, imported: str) -> None:
    for width, dark in ((1440, False), (1440, True), (390, False), (390, True)):
        page, problems = _open(chromium, imported, width=width, dark=dark)
        chart = page.locator("#chart-all")
        expect(chart.locator("rect.bar-rect").first).to_be_visible()
        expect(chart).to_have_attribute("data-total", str(TOTAL))  # months plus undated add up to every message
        expect(chart).to_have_attribute("data-months", "36")
        name = f"features-chart-{width}-{'dark' if dark else 'light'}"
        chart.scroll_into_view_if_needed()
        shoot(page, name, full_page=False)
        page.locator("#rows tr[data-sender='alice@friends.example.org'] button.who").click()
        expect(page.locator("#detail-chart")).to_have_attribute("data-total", "30")
        shoot(page, f"{name}-sender", full_page=False)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert problems == []
        close_page(page)


def test_presets_filter_the_table_totals_and_export(chromium: Browser, imported: str) -> None:
    page, problems = _open(chromium, imported)
    page.click("button.preset[data-preset='unsubscribe']")
    expect(page.locator("button.preset[data-preset='unsubscribe']")).to_have_attribute("aria-pressed", "true")
    # 10+ messages, 80%+ unread, an unsubscribe link: not rare (2 messages), not alice or bob
    expect(page.locator("#range")).to_have_text("1\u20133 of 3 senders")
    assert sorted(_senders(page)) == [
        "deals@mail.shop.example.com",
        "digest@news.example.co.uk",
        "news@shop.example.com",
    ]
    expect(page.locator("#export")).to_have_attribute("href", re.compile(r"has_unsubscribe=true"))
    shoot(page, "features-preset-unsubscribe-1440-light")
    page.click("button.preset[data-preset='largest']")
    expect(page.locator("th[data-col='bytes']")).to_have_attribute("aria-sort", "descending")
    page.click("button.preset[data-preset='all']")
    expect(page.locator("#rows tr")).to_have_count(6)
    assert problems == []


def test_hidden_senders_leave_totals_and_paging_with_undo(chromium: Browser, imported: str) -> None:
    page, problems = _open(chromium, imported)
    expect(page.locator("#tile-top")).to_have_text("Shop News")
    page.locator("#rows tr[data-sender='news@shop.example.com']").get_by_role(
        "button", name=re.compile("^Hide")
    ).click()
    expect(page.locator("#tile-messages")).to_have_text(str(TOTAL - 60))
    expect(page.locator("#tile-senders")).to_have_text("5")
    expect(page.locator("#tile-top")).to_have_text("Alice")  # a hidden sender is never "Top sender"
    expect(page.locator("#range")).to_have_text("1\u20135 of 5 senders")
    expect(page.locator("#export")).to_have_attribute("href", re.compile("hidden=[0-9a-f]{32}"))
    shoot(page, "features-hidden-1440-light")
    page.locator("#undo").get_by_role("button", name="Undo").click()
    expect(page.locator("#tile-messages")).to_have_text(str(TOTAL))
    expect(page.locator("#range")).to_have_text("1\u20136 of 6 senders")
    page.evaluate("localStorage.clear()")
    assert problems == []
