"""Issue 23's page that heals itself, in Debian's chromium: the viewer stops under an open page, the person hides a
sender during the outage, the viewer comes back on the same port (forgetting the hidden set it held), and within
5 s the page has no stale notice, a drawn chart, the sender out of the table, and Hide buttons that hide."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.support.browser import many_senders, new_page, serve, shoot
from tests.support.net import free_port
from tests.support.viewer import make_settings, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000
CONVERGE_MS = 5_000


def test_the_page_converges_after_a_viewer_restart_with_a_click_during_the_outage(
    chromium: Browser, tmp_path: Path
) -> None:
    seed(tmp_path / "stats.db", many_senders())
    settings = make_settings(tmp_path)
    port = free_port()
    page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
    with serve(settings, port=port) as url:
        page.goto(url)
        expect(page.locator("#rows tr")).to_have_count(50)
        expect(page.locator("#chart-all svg")).to_have_count(1)
    # The viewer is gone: the page says so, and a Hide clicked now cannot reach it.
    expect(page.locator("#notice")).to_contain_text("not answering", timeout=TIMEOUT_MS)
    leader = page.locator("#rows tr").first
    sender = leader.get_attribute("data-sender")
    leader.locator("button.hide-button").click()
    expect(page.locator("#undo")).to_be_visible()
    expect(page.locator("#table-message")).not_to_be_empty()  # the reload failed, and the page says so
    expect(page.locator("#rows tr").first.locator("button.hide-button")).to_have_text("Hide")  # as it will act
    shoot(page, "heal-outage-1440-light", full_page=False)

    with serve(settings, port=port):
        back = time.monotonic()
        expect(page.locator("#notice")).to_be_hidden(timeout=CONVERGE_MS)
        expect(page.locator(f"#rows tr[data-sender='{sender}']")).to_have_count(0, timeout=CONVERGE_MS)
        expect(page.locator("#table-message")).to_be_empty(timeout=CONVERGE_MS)
        expect(page.locator("#chart-all svg")).to_have_count(1, timeout=CONVERGE_MS)
        expect(page.locator("#tile-senders")).to_have_text("119", timeout=CONVERGE_MS)  # the restarted viewer
        assert time.monotonic() - back < CONVERGE_MS / 1000  # learnt the hidden set again
        # Every row's button says what it does: Hide hides (the first row now is the old second).
        first = page.locator("#rows tr").first
        second_sender = first.get_attribute("data-sender")
        first.locator("button.hide-button").click()
        expect(page.locator(f"#rows tr[data-sender='{second_sender}']")).to_have_count(0)
        expect(page.locator("#tile-senders")).to_have_text("118")
        shoot(page, "heal-back-1440-light", full_page=False)
    # A viewer that stopped is a failed resource for chromium; nothing else may be logged.
    assert [p for p in console.problems if "ERR_CONNECTION_REFUSED" not in p] == []
