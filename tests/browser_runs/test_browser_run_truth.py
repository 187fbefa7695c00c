"""Issue 23's runs that must never look complete, in Debian's chromium against real ingester processes: an import
killed with SIGKILL mid-way (its row left `running`) and a scan that finished with messages Google would not give.
Each shows a banner within one poll, says the counts are partial on the pill, the tiles and the history, and offers
the action that completes it; screenshots `truth-*-{1440,390}-{light,dark}.png` go to tests/artifacts/."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.axe import assert_clean
from tests.support.browser import ARTIFACTS, close_page, new_page, serve, shoot
from tests.support.importing import counts_of, query
from tests.support.scan import fake_google
from tests.support.viewer import make_settings, mbox_bytes
from viewer.launch.launch_process import ProcessLauncher, default_ingest_command

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 120_000
MESSAGES = 120_000
# The page polls once a second while a run is live; the status answer is recomputed when the lock changes.
BANNER_WITHIN_MS = 2_000
# When the page first showed the banner, by the page's own clock (the same machine's): Playwright's own polling
# of `expect` adds up to a second, which is no part of what the page did.
STAMP_BANNER = """
document.addEventListener("DOMContentLoaded", () => {
  const banner = document.getElementById("run-banner");
  new MutationObserver(() => {
    if (!banner.classList.contains("hidden") && window.__bannerAt === undefined) window.__bannerAt = Date.now();
  }).observe(banner, { attributes: true, attributeFilter: ["class"], subtree: true, childList: true });
});
"""


@pytest.fixture(autouse=True)
def _patient_expect() -> None:
    expect.set_options(timeout=TIMEOUT_MS)


def _shoot_all(chromium: Browser, url: str, name: str, first: Page) -> None:
    """`first` at 1440 px light, then the same state in new pages at 390 px and in dark; axe finds nothing serious
    in any of them."""
    assert_clean(first, f"the {name} banner at 1440 px")
    shoot(first, f"truth-{name}-1440-light", full_page=False)
    for width, dark in ((1440, True), (390, False), (390, True)):
        page, console = new_page(chromium, width=width, dark=dark, timeout_ms=TIMEOUT_MS)
        page.goto(url)
        expect(page.locator("#run-banner")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing overflows sideways
        assert_clean(page, f"the {name} banner at {width} px{' dark' if dark else ''}")
        shoot(page, f"truth-{name}-{width}-{'dark' if dark else 'light'}", full_page=False)
        assert console.problems == []
        close_page(page)


def _import_pid(db: Path) -> int:
    return int(query(db, "SELECT pid FROM ingest_runs ORDER BY run_id DESC LIMIT 1")[0][0])


def test_a_killed_import_is_shown_stopped_within_one_poll_and_resumes_exactly(
    chromium: Browser, tmp_path: Path
) -> None:
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "big.mbox").write_bytes(mbox_bytes(MESSAGES, senders=40, tag="k"))
    settings = make_settings(tmp_path)
    with serve(settings) as url:
        page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
        page.add_init_script(script=STAMP_BANNER)
        page.goto(url)
        page.select_option("#import-file", "big.mbox")
        page.click("#start-import")
        expect(page.locator("#progress-cancel")).to_be_visible()
        page.wait_for_function(
            "() => Number(document.getElementById('progress-bar').getAttribute('aria-valuenow') || 0) >= 15",
            timeout=TIMEOUT_MS,
        )
        killed_at = time.time()
        os.kill(_import_pid(settings.db), signal.SIGKILL)
        title = page.locator("#run-banner-title")
        expect(title).to_have_text(re.compile(r"^Import stopped unexpectedly at \d+% — counts are partial\.$"))
        latency = page.evaluate("() => window.__bannerAt") / 1000 - killed_at
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "truth-killed-latency.txt").write_text(f"banner {latency:.2f} s after SIGKILL\n")
        assert 0 < latency < BANNER_WITHIN_MS / 1000
        expect(page.locator("#progress")).to_be_hidden()
        expect(page.locator("#pill")).to_have_text("Last run stopped unexpectedly")
        note = page.locator("#counts-note")
        expect(note).to_be_visible()
        expect(note).to_have_text(re.compile(r"^Counts are partial: Import stopped unexpectedly at \d+%\.$"))
        card = page.locator("#history-list > li").first
        expect(card.locator(".chip")).to_have_text("stopped unexpectedly")
        expect(card).to_contain_text(re.compile(r"partial: stopped at \d+%"))
        expect(card.get_by_role("button", name="Resume")).to_be_visible()
        # Derived, never written: the row still says `running`, the API says it stopped.
        assert query(settings.db, "SELECT state FROM ingest_runs")[0][0] == "running"
        status = page.request.get(f"{url}/api/status").json()
        assert (status["active_run"], status["last_run"]["stopped_unexpectedly"]) == (None, True)
        # A reload shows the same: nothing depended on having watched the run die.
        page.reload()
        expect(title).to_contain_text("stopped unexpectedly")
        _shoot_all(chromium, url, "killed", page)

        page.locator("#run-banner").get_by_role("button", name="Resume").click()
        expect(card.locator(".chip")).to_have_text("done")
        expect(page.locator("#run-banner")).to_be_hidden()
        expect(note).to_be_hidden()
        expect(page.locator("#pill")).to_be_hidden()
        expect(page.locator("#history-list > li")).to_have_count(1)  # resumed in place
        expect(page.locator("#tile-messages")).to_have_text(f"{MESSAGES:,}")
        assert sum(counts_of(settings.db).values()) == MESSAGES  # exact: nothing counted twice, nothing lost
        assert query(settings.db, "SELECT state, outcome, messages_new FROM ingest_runs") == [
            ("done", "complete", MESSAGES)
        ]
        assert console.problems == []


def test_a_partial_scan_names_what_is_missing_and_the_next_scan_completes_it(chromium: Browser, tmp_path: Path) -> None:
    with fake_google(tmp_path, 300) as g:
        stuck = g.google.mailbox.listed(include_spam_trash=False)[20:27]
        g.google.faults.always_fail.update(stuck)
        g.google.faults.error_5xx_rate = 0.2  # and flaky besides: retried, never lost
        result = g.scan(GMAIL_STATS_RETRY_ATTEMPTS="4")
        assert result.returncode == 0, result.stderr
        assert query(g.db, "SELECT state, outcome FROM ingest_runs") == [("done", "partial")]
        # The stuck ones, and any the flaky answers beat on every attempt: the next scan retries them all.
        missing = int(query(g.db, "SELECT count(*) FROM gmail_retry")[0][0])
        assert missing >= len(stuck)
        settings = make_settings(tmp_path, db=g.db)
        launcher = ProcessLauncher(
            ingest_command=default_ingest_command(),
            db_path=g.db,
            import_dir=settings.import_dir,
            environ={**os.environ, **g.env(GMAIL_STATS_RETRY_ATTEMPTS="4")},
        )
        with serve(settings, launcher=launcher) as url:
            page, console = new_page(chromium, timeout_ms=TIMEOUT_MS)
            page.goto(url)
            banner = page.locator("#run-banner")
            expect(page.locator("#run-banner-title")).to_have_text(
                f"Scan finished, but {missing} messages could not be fetched — counts are partial."
            )
            expect(page.locator("#run-banner-text")).to_contain_text("The next scan fetches them")
            expect(page.locator("#pill")).to_have_text("Last run partial")
            expect(page.locator("#counts-note")).to_have_text(
                f"Counts are partial: Scan finished, but {missing} messages could not be fetched."
            )
            card = page.locator("#history-list > li").first
            expect(card.locator(".chip")).to_have_text("partial")
            expect(card).to_contain_text(f"partial: {missing} not fetched yet")
            assert page.request.get(f"{url}/api/runs").json()["runs"][0]["unfetched"] == missing
            _shoot_all(chromium, url, "partial-scan", page)

            g.google.faults.always_fail.clear()
            g.google.faults.error_5xx_rate = 0.0
            banner.get_by_role("button", name="Start again").click()
            expect(page.locator("#history-list > li")).to_have_count(2)
            expect(page.locator("#history-list > li").first.locator(".chip")).to_have_text("done")
            expect(banner).to_be_hidden()
            expect(page.locator("#counts-note")).to_be_hidden()
            assert counts_of(g.db) == g.google.mailbox.expected_counts()
            assert console.problems == []
