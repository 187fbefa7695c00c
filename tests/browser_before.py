"""Screenshots of the trust bugs on the page as it was before issue 10 (`python -m tests.browser_before [REF]`).

The old `index.html`, `app.js` and `app.css` are read from git (default: the commit the fix started from) and
served in place of the current ones through Playwright's routing, against today's API; the `*-before.png` files
land beside the fixed ones that tests/test_browser_trust.py writes, so each pair shows the failing state first.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Browser, Page, Route
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from tests.browser_support import browser, many_senders, seed_history, serve, shoot
from tests.conftest import REPO_ROOT
from tests.viewer_support import make_settings, mbox_bytes, seed

BASE_REF = "f371303"
OLD_FILES = {"/": "index.html", "/static/app.js": "app.js", "/static/app.css": "app.css"}


def _old(ref: str) -> dict[str, bytes]:
    return {
        url: subprocess.run(
            ["git", "show", f"{ref}:viewer/static/{name}"], cwd=REPO_ROOT, capture_output=True, check=True
        ).stdout
        for url, name in OLD_FILES.items()
    }


def _page(chromium: Browser, old: dict[str, bytes], base: str, *, width: int = 1440) -> Page:
    context = chromium.new_context(viewport={"width": width, "height": 900 if width > 500 else 844})
    page = context.new_page()

    def swap(route: Route) -> None:
        response = route.fetch()
        path = route.request.url[len(base) :].split("?")[0]
        route.fulfill(response=response, body=old[path])

    for path in OLD_FILES:
        page.route(base + path, swap)
    return page


def capture(chromium: Browser, ref: str) -> None:
    old = _old(ref)
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        db = tmp / "stats.db"
        seed(db, many_senders())
        seed_history(db)
        with serve(make_settings(tmp)) as url:
            page = _page(chromium, old, url)
            page.goto(url)
            page.wait_for_selector("#rows tr")
            shoot(page, "trust-share-bars-before")
            shoot(page, "trust-history-before")
            page.click("button.sort[data-sort='sender']")
            page.wait_for_timeout(800)
            shoot(page, "trust-sender-sort-before")
            # A search whose answer arrives late, after the box was cleared: the empty state stays.
            held: list[Route] = []
            page.route(lambda u: "q=zzz" in u, lambda route: held.append(route))
            page.fill("#search", "zzz")
            page.wait_for_timeout(600)
            page.fill("#search", "")
            page.wait_for_timeout(1000)
            for route in held:
                route.continue_()
            page.wait_for_timeout(1000)
            shoot(page, "trust-stale-search-before")
            page.evaluate(
                "localStorage.setItem('gmail-stats.hidden', JSON.stringify("
                "[...document.querySelectorAll('#rows tr')].slice(0, 25).map(r => r.dataset.sender)))"
            )
            page.select_option("#page-size", "25")
            page.reload()
            page.wait_for_selector("#range:has-text('of 120')")
            page.wait_for_timeout(500)
            shoot(page, "trust-hide-before")
            page.context.close()
            phone = _page(chromium, old, url, width=390)
            phone.goto(url)
            phone.wait_for_selector("#rows tr")
            shoot(phone, "trust-phone-before")
            phone.context.close()

        engine = writer_engine(db)
        with engine.begin() as conn:
            conn.execute(text("PRAGMA user_version = 99"))
        close_writer_keeping_sidecars(engine, db)
        with serve(make_settings(tmp)) as url:
            page = _page(chromium, old, url)
            page.goto(url)
            page.wait_for_timeout(2500)
            shoot(page, "trust-too-new-before")
            page.context.close()
        for sidecar in tmp.glob("stats.db*"):
            sidecar.unlink()
        db.write_bytes(b"this is not a database" * 1000)
        with serve(make_settings(tmp)) as url:
            page = _page(chromium, old, url)
            page.goto(url)
            page.wait_for_timeout(2500)
            shoot(page, "trust-corrupt-before")
            page.context.close()

    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        with serve(make_settings(tmp)) as url:  # no import folder at all
            page = _page(chromium, old, url)
            page.goto(url)
            page.wait_for_timeout(1500)
            shoot(page, "trust-missing-folder-before")
            (tmp / "imports").mkdir()
            (tmp / "imports" / "notmail.mbox").write_bytes(b"hello, not an mbox\n")
            (tmp / "imports" / "big.mbox").write_bytes(mbox_bytes(150_000, senders=40, tag="c"))
            page.click("#refresh-imports")
            page.select_option("#import-file", "notmail.mbox")
            page.click("#start-import")
            page.wait_for_timeout(300)
            shoot(page, "trust-launch-error-before-0s")
            page.wait_for_timeout(2500)
            shoot(page, "trust-launch-error-before-3s")
            page.select_option("#import-file", "big.mbox")
            page.click("#start-import")
            page.wait_for_selector("#progress-cancel:visible")
            while int(page.get_attribute("#progress-bar", "aria-valuenow") or 0) < 20:
                page.wait_for_timeout(100)
            page.click("#progress-cancel")
            page.wait_for_timeout(600)
            shoot(page, "trust-cancelling-before")
            page.wait_for_selector("#history-list li:has-text('cancelled')")
            page.wait_for_timeout(1500)
            shoot(page, "trust-cancelled-before")
            page.context.close()


if __name__ == "__main__":
    with browser() as chromium:
        capture(chromium, sys.argv[1] if len(sys.argv) > 1 else BASE_REF)
