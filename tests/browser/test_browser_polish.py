"""Issue 23's polish list in Debian's chromium, one small check each: chart axis labels past 99,999, the long tail's
share, the theme icon, Add mail (clear of the sticky bar, closable, offering a file not imported yet), the title of
an unusable OAuth client file, run cards and the pill at 390 px, and older runs on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import create_run, finish_run, update_run
from shared.schema.models import RunOutcome, RunState, Source
from tests.support.browser import close_page, many_senders, new_page, serve, shoot
from tests.support.viewer import make_settings, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _runs(db: Path, import_dir: Path) -> None:
    """Eight finished imports (the newest of `old.mbox` in the import folder) and a scan refused for its client file."""
    engine = writer_engine(db)
    with engine.begin() as conn:
        last = create_run(conn, source=Source.MBOX, pid=1, now=1_700_001_000, mbox_path=str(import_dir / "old.mbox"))
        update_run(conn, last, now=1_700_001_010, messages_seen=5, messages_new=5)
        finish_run(conn, last, state=RunState.DONE, outcome=RunOutcome.COMPLETE, now=1_700_001_020)
        scan = create_run(conn, source=Source.GMAIL_API, pid=1, now=1_700_002_000)
        finish_run(
            conn,
            scan,
            state=RunState.FAILED,
            outcome=RunOutcome.PARTIAL,
            now=1_700_002_010,
            error_kind="missing_credentials",
            error="/secrets/credentials.json is not an OAuth client-secret file: download it again",
        )
    close_writer_keeping_sidecars(engine, db)


@pytest.fixture(scope="module")
def polished(tmp_path_factory: pytest.TempPathFactory) -> object:
    tmp = tmp_path_factory.mktemp("polish")
    (tmp / "imports").mkdir()
    for name in ("old.mbox", "new.mbox"):
        (tmp / "imports" / name).write_bytes(b"From a@b Fri Dec 04 20:33:24 +0000 2020\nFrom: a@example.com\n\nx\n")
    seed(tmp / "stats.db", many_senders(), finished_runs=7)
    _runs(tmp / "stats.db", tmp / "imports")
    with serve(make_settings(tmp)) as url:
        yield url


def _page(chromium: Browser, url: str, *, width: int = 1440, dark: bool = False) -> Page:
    page, _ = new_page(chromium, width=width, dark=dark, timeout_ms=TIMEOUT_MS)
    page.goto(url)
    expect(page.locator("#rows tr")).to_have_count(50)
    return page


def test_chart_axis_labels_keep_every_digit(chromium: Browser, polished: str) -> None:
    page, _ = new_page(chromium, timeout_ms=TIMEOUT_MS)
    volume = {"months": [{"month": "2024-01", "messages": 250_000, "bytes": 1}], "undated": 0}

    def answer(route: Route) -> None:
        route.fulfill(status=200, content_type="application/json", body=json.dumps(volume))

    page.route(f"{polished}/api/volume", answer)
    page.goto(polished)
    label = page.locator("#chart-all text.axis", has_text="250,000")
    expect(label).to_have_count(1)
    inside = page.evaluate(
        "() => [...document.querySelectorAll('#chart-all text.axis')]"
        ".find((n) => n.textContent === '250,000').getBBox().x >= 0"
    )
    assert inside, "the label starts left of the chart's edge"
    close_page(page)


def test_long_tail_share_theme_icon_and_credentials_title(chromium: Browser, polished: str) -> None:
    page = _page(chromium, polished)
    shares = page.evaluate(
        "async () => { const u = await import('/static/util.js');"
        " return [u.shareText(0), u.shareText(0.00003), u.shareText(0.004), u.shareText(0.25)]; }"
    )
    assert shares == ["0%", "<0.01%", "0.40%", "25.0%"]
    expect(page.locator("#theme .icon-moon")).to_be_visible()
    expect(page.locator("#theme .icon-sun")).to_be_hidden()
    page.click("#theme")
    expect(page.locator("#theme .icon-sun")).to_be_visible()
    expect(page.locator("#theme .icon-moon")).to_be_hidden()
    expect(page.locator("#run-banner-text")).to_contain_text("The OAuth client file is missing or unusable.")
    expect(page.locator("#run-banner-error")).to_contain_text("is not an OAuth client-secret file")
    close_page(page)


def test_add_mail_clears_the_bar_closes_and_offers_a_new_file(chromium: Browser, polished: str) -> None:
    page = _page(chromium, polished)
    page.click("#add-more")
    heading = page.locator("#onboarding-title")
    expect(heading).to_be_in_viewport()
    expect(page.locator("#import-file")).to_have_value("new.mbox")  # old.mbox was imported already
    page.wait_for_function(
        "() => { const h = document.getElementById('onboarding-title').getBoundingClientRect();"
        " return h.top >= document.querySelector('.topbar').getBoundingClientRect().bottom; }"
    )
    shoot(page, "polish-add-mail-1440-light", full_page=False)
    page.get_by_role("button", name="Close").click()
    expect(page.locator("#onboarding")).to_be_hidden()
    expect(page.locator("#add-more")).to_be_focused()
    close_page(page)


def test_older_runs_on_request_and_nothing_overflows_on_a_phone(chromium: Browser, polished: str) -> None:
    page = _page(chromium, polished)
    runs = page.locator("#history-list > li")
    expect(runs).to_have_count(6)
    page.get_by_role("button", name="Show older runs").click()
    expect(runs).to_have_count(9)
    expect(page.locator("#history-more")).to_be_hidden()
    close_page(page)
    for dark in (False, True):
        phone = _page(chromium, polished, width=390, dark=dark)
        expect(phone.locator("#history-list > li")).to_have_count(6)
        overflowing = phone.evaluate(
            "() => [...document.querySelectorAll('#history-list > li, #run-banner')]"
            ".filter(n => n.scrollWidth > n.clientWidth + 1).map(n => n.dataset.runId || n.id)"
        )
        assert overflowing == []
        box = phone.locator("#pill").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        shoot(phone, f"polish-history-390-{'dark' if dark else 'light'}")
        close_page(phone)


def test_export_says_it_is_working_and_long_addresses_keep_their_domain(chromium: Browser, polished: str) -> None:
    page, console = new_page(chromium, width=390, timeout_ms=TIMEOUT_MS)
    slow: list[Route] = []
    page.route(f"{polished}/api/export.csv*", lambda route: slow.append(route))  # held until the test lets it go
    page.goto(polished)
    expect(page.locator("#rows tr")).to_have_count(50)
    link = page.locator("#export")
    link.click()
    expect(link).to_have_attribute("aria-busy", "true")
    expect(link).to_have_text("Preparing CSV…")
    for _ in range(500):  # the held request reaches the route handler when Playwright next dispatches events
        if slow:
            break
        page.wait_for_timeout(20)
    with page.expect_download() as download:
        slow[0].fulfill(status=200, content_type="text/csv", body="sender,messages\r\na@example.com,1\r\n")
    assert download.value.suggested_filename == "gmail-stats-senders.csv"
    expect(link).to_have_text("Export CSV")
    expect(link).not_to_have_attribute("aria-busy", "true")
    # The address line of a name-first row: where it does not fit, the ellipsis takes its start, not the domain.
    address = page.locator("#rows tr .who-address").first
    assert address.evaluate("(n) => getComputedStyle(n).direction") == "rtl"
    assert address.evaluate("(n) => n.textContent.endsWith('.example.com')")
    assert console.problems == []
    close_page(page)
