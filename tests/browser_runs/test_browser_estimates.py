"""Issue 25's page in Debian's chromium against a real scan process: while a first scan fetches in random order
the page shows each top sender as "≈ 4,800 ± 300" under a banner "Estimated from 3% of your mailbox — exact in
about …" (axe-core finding nothing serious); after SIGTERM it keeps them, saying the scan stopped; once the
resumed scan completes they are gone. Screenshots `estimates-*.png` go to tests/artifacts/."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.fakes.mailbox import TYPICAL
from tests.support.axe import violations
from tests.support.browser import close_page, new_page, serve, shoot
from tests.support.scan import fake_google, last_run, wait_for
from tests.support.viewer import make_settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]
QUOTA = "250"  # Gmail's own pace: about a minute for these 3,000 messages
APPROX = re.compile(r"^≈ [\d,]+ ± [\d,]+$")


def test_estimates_while_running_after_a_stop_and_gone_when_exact(tmp_path: Path, chromium: Browser) -> None:
    expect.set_options(timeout=60_000)
    with fake_google(tmp_path, 3000, quota=float(QUOTA), mix=TYPICAL) as g:
        process = g.popen(GMAIL_STATS_QUOTA_UNITS_PER_SEC=QUOTA)
        try:
            run = wait_for(
                lambda: (
                    (r := last_run(g.db)) and r["resume_token"] == "sample:fetch" and r["messages_new"] >= 600 and r
                ),
                timeout=120,
                what="a first chunk settled in random order",
            )
            with serve(make_settings(tmp_path, db=g.db)) as url:
                page, console = new_page(chromium)
                page.goto(url)
                banner = page.locator("#estimates-banner")
                expect(banner).to_have_text(
                    re.compile(r"^Estimated from (\d+%|less than 1%) of your mailbox — exact in ")
                )
                first = page.locator("#estimates-body tr").first
                expect(first.locator("td").nth(2)).to_have_text(APPROX)
                expect(page.locator("#estimates-table thead")).to_contain_text("Messages (estimated)")
                shoot(page, "estimates-running", full_page=False)
                found = violations(page)
                assert found == [], [(v["id"], v["impact"], v["help"]) for v in found]
                process.send_signal(signal.SIGTERM)
                process.communicate(timeout=60)
                page.reload()
                expect(banner).to_have_text(re.compile(r"the scan stopped; resume it for exact counts\.$"))
                expect(first.locator("td").nth(2)).to_have_text(APPROX)
                shoot(page, "estimates-stopped", full_page=False)
                g.google.bucket = None
                done = g.scan("--resume", str(run["run_id"]))
                assert done.returncode == 0, done.stderr
                page.reload()
                expect(page.locator("#stats")).to_be_visible()
                expect(page.locator("#estimates")).to_be_hidden()
                assert console.problems == []
                close_page(page)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
