"""Issue 23's phone at 390x844 in Debian's chromium: with a few hundred senders the table's first row is on the first
screen without scrolling, and the run pill in the header is whole (inside the viewport, clipped by no ancestor, its
text not cut), light and dark. Screenshots `phone-*-390-*.png` go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import create_run, update_run
from shared.schema.models import Source
from tests.support.browser import close_page, many_senders, new_page, serve, shoot
from tests.support.viewer import make_settings, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000
WIDTH, HEIGHT = 390, 844  # new_page's phone viewport
SENDERS = 300
# No live process has this pid: the row is open, nobody holds the lock, so the page says it stopped unexpectedly.
DEAD_PID = 2**22 - 7

# Every way the pill's box could be cut: past the viewport, past an ancestor that clips (overflow other than
# visible), or its own text wider than its box (ellipsis).
PILL_CUTS = """() => {
  const pill = document.getElementById("pill");
  const box = pill.getBoundingClientRect();
  const cuts = [];
  if (box.width === 0 || box.height === 0) cuts.push("no box");
  if (box.left < 0 || box.top < 0 || box.right > innerWidth || box.bottom > innerHeight) cuts.push("viewport");
  if (pill.scrollWidth > pill.clientWidth + 1 || pill.scrollHeight > pill.clientHeight + 1) cuts.push("own text");
  for (let node = pill.parentElement; node && node !== document.documentElement; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const outer = node.getBoundingClientRect();
    const out = box.left < outer.left - 0.5 || box.right > outer.right + 0.5;
    if (out || box.top < outer.top - 0.5 || box.bottom > outer.bottom + 0.5) cuts.push(node.id || node.className);
  }
  return cuts;
}"""


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _phone(chromium: Browser, url: str, *, dark: bool) -> Page:
    page, console = new_page(chromium, width=WIDTH, dark=dark, timeout_ms=TIMEOUT_MS)
    assert page.viewport_size == {"width": WIDTH, "height": HEIGHT}
    page.goto(url)
    expect(page.locator("#rows tr")).to_have_count(50)
    assert console.problems == []
    return page


def _leave_a_run_open(db: Path) -> None:
    """An import row left `running` at 34% by an ingester that is gone (as after `kill -9`)."""
    engine = writer_engine(db)
    with engine.begin() as conn:
        run = create_run(
            conn, source=Source.MBOX, pid=DEAD_PID, now=1_700_100_000, mbox_path="/nowhere/x.mbox", bytes_total=1000
        )
        update_run(conn, run, now=1_700_100_010, bytes_done=340, messages_seen=300, messages_new=300)
    close_writer_keeping_sidecars(engine, db)


def test_first_row_on_the_first_screen_and_the_pill_whole(chromium: Browser, tmp_path: Path) -> None:
    seed(tmp_path / "stats.db", many_senders(SENDERS))
    settings = make_settings(tmp_path)
    with serve(settings) as url:
        for dark in (False, True):
            page = _phone(chromium, url, dark=dark)
            expect(page.locator("#range")).to_have_text(f"1\u201350 of {SENDERS} senders")
            assert page.evaluate("() => window.scrollY") == 0
            row = page.locator("#rows tr").first.bounding_box()
            assert row is not None
            assert row["y"] >= 0 and row["y"] + row["height"] <= HEIGHT, row
            assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH
            shoot(page, f"phone-table-390-{'dark' if dark else 'light'}", full_page=False)
            close_page(page)

        _leave_a_run_open(settings.db)
        for dark in (False, True):
            page = _phone(chromium, url, dark=dark)
            pill = page.locator("#pill")
            expect(pill).to_have_text("Last run stopped unexpectedly")
            assert page.evaluate(PILL_CUTS) == []
            # The brand's name leaves the bar to make room, but the heading keeps it for screen readers.
            expect(page.get_by_role("heading", level=1, name="gmail-stats")).to_be_attached()
            shoot(page, f"phone-pill-390-{'dark' if dark else 'light'}", full_page=False)
            # The longest labels a live run gives the pill wrap inside the bar rather than lose their end.
            for label in ("Message-ID backfill: awaiting consent", "Takeout import: cancelling…"):
                pill.evaluate("(node, text) => { node.textContent = text; }", label)
                assert page.evaluate(PILL_CUTS) == [], label
            close_page(page)
