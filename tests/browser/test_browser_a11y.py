"""Issue 23's accessibility in Debian's chromium: keyboard-only import, cancel and resume of a real ingester with
focus never resting on <body> (also while a live run redraws the table and after closing details during it), the
live regions and names a screen reader needs, and axe-core (tests/axe/) finding no serious or critical violation on
the page's screens. Screenshots `a11y-*.png` go to tests/artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.axe import assert_clean
from tests.support.browser import close_page, new_page, serve, shoot
from tests.support.importing import counts_of
from tests.support.viewer import make_settings, mbox_bytes

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 120_000
MESSAGES = 800_000  # a run long enough for the steps taken while it is live, on a fast machine too

# Installed before the page's own scripts (over the DevTools protocol, so the page's CSP stays on): samples where
# focus is every 10 ms once armed, records every element that gains focus, and counts redraws of the table body.
WATCH_FOCUS = """
window.__focus = { armed: false, onBody: [], redraws: 0, trail: [] };
window.__arm = () => { window.__focus.armed = true; };
document.addEventListener("focusin", (event) => {
  const node = event.target;
  const region = node.parentElement ? node.parentElement.closest("[id]") : null;
  window.__focus.trail.push(node.id ? "#" + node.id : `${region ? "#" + region.id : ""} ${node.textContent.trim()}`);
});
setInterval(() => {
  const f = window.__focus;
  if (f.armed && (document.activeElement === document.body || document.activeElement === null)) {
    f.onBody.push(new Date().toISOString());
  }
}, 10);
document.addEventListener("DOMContentLoaded", () => {
  const count = () => { window.__focus.redraws += 1; };
  new MutationObserver(count).observe(document.getElementById("rows"), { childList: true });
});
"""


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _tab_to(page: Page, selector: str, *, limit: int = 400, back: bool = False) -> None:
    """Tabs until `selector` has focus; each table row holds three stops (its box, name and Hide)."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.evaluate("(s) => Boolean(document.activeElement && document.activeElement.matches(s))", selector):
            return
    raise AssertionError(f"{selector} not reached in {limit} Tab presses")


def _focused(page: Page) -> str:
    return str(page.evaluate("() => document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : ''"))


def _redraws(page: Page) -> int:
    return int(page.evaluate("() => window.__focus.redraws"))


def _trail(page: Page) -> list[str]:
    """Every element that gained focus since the page loaded, oldest first."""
    return list(page.evaluate("() => window.__focus.trail"))


@pytest.fixture
def big_import(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(MESSAGES, senders=60, tag="a11y"))
    settings = make_settings(tmp_path)
    with serve(settings) as url:
        yield url, settings.db


def test_keyboard_only_import_cancel_and_resume_never_drop_focus(
    chromium: Browser, big_import: tuple[str, Path]
) -> None:
    url, db = big_import
    page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
    page.add_init_script(script=WATCH_FOCUS)
    page.goto(url)
    expect(page.locator("#import-file option")).to_have_count(1)
    assert_clean(page, "onboarding")
    _tab_to(page, "#start-import")
    page.evaluate("() => window.__arm()")

    # Import: the button keeps focus while busy, then the progress panel's Cancel takes it.
    page.keyboard.press("Enter")
    cancel = page.locator("#progress-cancel")
    expect(cancel).to_be_focused()
    expect(page.locator("#rows tr")).not_to_have_count(0)
    assert_clean(page, "a live import")
    shoot(page, "a11y-progress-focus-1440-light", full_page=False)

    # The live run redraws the table: a focused row button stays focused in the new row of the same sender.
    _tab_to(page, "#rows tr:nth-child(3) button.who")
    sender = page.evaluate("() => document.activeElement.closest('tr').dataset.sender")
    seen = _redraws(page)
    page.wait_for_function("(n) => window.__focus.redraws >= n + 2", arg=seen)
    assert page.evaluate("() => document.activeElement.matches('#rows tr button.who')"), _focused(page)
    assert page.evaluate("() => document.activeElement.closest('tr').dataset.sender") == sender

    # Details opened and closed during the run: focus comes back to that sender's row, though it was redrawn.
    page.keyboard.press("Enter")
    expect(page.locator("#detail")).to_be_visible()
    seen = _redraws(page)
    page.wait_for_function("(n) => window.__focus.redraws >= n + 1", arg=seen)
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()
    expect(page.locator(f"#rows tr[data-sender='{sender}'] button.who")).to_be_focused()

    # Cancel: focus stays on the (now aria-disabled) button, then moves to the banner's Resume when the run ends.
    # How long "Cancelling…" lasts is the machine's business: the trail of focused elements shows that nothing but
    # a stand-in region (while the banner is drawn, viewer/static/focus.js) took focus between the button and
    # Resume, however short that state was.
    _tab_to(page, "#progress-cancel", back=True)
    trail_before = len(_trail(page))
    page.keyboard.press("Enter")
    resume = page.locator("#run-banner").get_by_role("button", name="Resume")
    expect(resume).to_be_focused()
    *stand_ins, landed = _trail(page)[trail_before:]
    assert landed == "#run-banner-actions Resume"
    assert set(stand_ins) <= {"#run-banner", "#progress"}, stand_ins
    expect(page.locator("#announce-polite")).to_have_text(
        re.compile(r"^Import stopped at \d+% — counts are partial\.$")
    )
    assert_clean(page, "a cancelled import")
    shoot(page, "a11y-banner-focus-1440-light", full_page=False)

    # Resume: back to the progress panel's Cancel.
    page.keyboard.press("Enter")
    expect(cancel).to_be_focused()

    expect(page.locator("#history-list > li").first.locator(".chip")).to_have_text("done")
    expect(page.locator("#tile-messages")).to_have_text(f"{MESSAGES:,}")
    assert sum(counts_of(db).values()) == MESSAGES
    assert page.evaluate("() => document.activeElement !== document.body"), _focused(page)
    on_body = page.evaluate("() => window.__focus.onBody")
    assert on_body == [], f"focus rested on <body> at {on_body[:5]}"
    assert console.problems == []


def test_live_regions_names_and_axe_on_every_screen(chromium: Browser, filled: str) -> None:
    page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    # Polite: the row count, the progress and the run state; assertive: errors.
    expect(page.locator("#range")).to_have_attribute("aria-live", "polite")
    expect(page.locator("#announce-polite")).to_have_attribute("aria-live", "polite")
    expect(page.locator("#announce-assertive")).to_have_attribute("aria-live", "assertive")
    expect(page.locator("#announce-polite")).to_have_text("Import stopped at 47% — counts are partial.")
    expect(page.get_by_role("table", name="Mail by sender")).to_be_visible()
    # Header names are their labels: the sort arrows are decoration.
    expect(page.get_by_role("button", name="Messages", exact=True)).to_be_visible()
    expect(page.get_by_role("columnheader", name="Messages", exact=True)).to_have_attribute("aria-sort", "descending")
    assert_clean(page, "the table")
    page.click("#view-domains")
    expect(page.get_by_role("table", name="Mail by domain")).to_be_visible()
    assert_clean(page, "the domain view")
    page.click("#view-senders")
    page.locator("#rows tr").first.locator("button.who").click()
    expect(page.locator("#detail")).to_be_visible()
    assert_clean(page, "the detail view")
    page.keyboard.press("Escape")
    page.click("#hidden-toggle")
    page.click("#add-more")
    assert_clean(page, "add mail and the hidden list")
    close_page(page)
    for width, dark in ((1440, True), (390, False), (390, True)):
        small, small_console = new_page(chromium, width=width, dark=dark, timeout_ms=TIMEOUT_MS)
        small.goto(filled)
        expect(small.locator("#rows tr")).to_have_count(50)
        assert_clean(small, f"the table at {width} px{' dark' if dark else ''}")
        assert small_console.problems == []
        close_page(small)
    assert console.problems == []


def test_axe_on_the_empty_and_the_broken_database(chromium: Browser, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with serve(settings) as url:
        page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
        page.goto(url)
        expect(page.locator("#onboarding")).to_be_visible()
        assert_clean(page, "onboarding without an import folder")
        page.close()
        settings.db.write_bytes(b"this is not a database" * 100)
        page = page.context.new_page()
        page.goto(url)
        expect(page.locator("#db-problem")).to_be_visible()
        assert_clean(page, "an unreadable database")
        assert [p for p in console.problems if "status of 503" not in p] == []


def test_a_page_is_audited_when_it_is_closed(chromium: Browser, filled: str) -> None:
    page, _ = new_page(chromium, timeout_ms=TIMEOUT_MS)
    page.goto(filled)
    expect(page.locator("#rows tr")).to_have_count(50)
    # A button without a name (axe `button-name`, critical): closing the page fails the test and leaves it open.
    page.evaluate("() => { const b = document.createElement('button'); b.id = 'nameless'; document.body.append(b); }")
    with pytest.raises(AssertionError, match="button-name"):
        close_page(page)
    assert not page.is_closed()
    page.evaluate("() => document.getElementById('nameless').remove()")
    close_page(page)
    assert page.is_closed()
