"""Issue 26's hostile inputs where a person meets them, in Debian's chromium: unsubscribe links a stranger wrote,
the Export CSV download, the `make import` command the page offers for a hostile file name (then pasted into a
shell in a checkout whose `docker compose run` only records), and a file name that is not UTF-8. No console
errors, no CSP violations."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from shared.resume import CommandStyle
from shared.text.csv_cells import FORMULA_STARTS
from tests.support.browser import new_page, serve, shoot
from tests.support.hostile_senders import CLEAN_MAILTO, HOSTILE, hostile_mbox
from tests.support.importing import import_file
from tests.support.make import paste, recorded, scratch_checkout
from tests.support.viewer import make_settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAMES = ["x$(shell touch PWNED).mbox", '";touch PWNED;".mbox']


def test_a_strangers_senders_on_the_page_and_in_its_export(chromium: Browser, tmp_path: Path) -> None:
    (tmp_path / "hostile.mbox").write_bytes(hostile_mbox())
    import_file(tmp_path / "stats.db", tmp_path / "hostile.mbox")
    with serve(make_settings(tmp_path)) as url:
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#rows tr").first).to_be_visible()
        mailer = page.locator("#rows tr[data-sender='mailer@evil.example']").get_by_role(
            "link", name=re.compile("^Unsub")
        )
        expect(mailer).to_have_attribute("href", CLEAN_MAILTO)
        expect(mailer).to_have_text("Unsubscribe")
        plain = page.locator("#rows tr[data-sender='plain@evil.example'] a.unsub")
        expect(plain).to_have_text("Unsubscribehttp")  # the link's text, then its marker
        expect(plain.locator(".tag-http")).to_be_visible()
        expect(plain).to_have_attribute("aria-label", re.compile(r"unencrypted http: link"))
        expect(plain).to_have_attribute("title", re.compile("^Unencrypted"))
        safe = page.locator("#rows tr[data-sender='safe@good.example'] a.unsub")
        expect(safe).to_have_text("Unsubscribe")
        expect(safe).to_have_attribute("href", "https://good.example/unsub?u=1")
        # The formula-looking display name is shown as text, as it came.
        expect(page.locator("#rows tr[data-sender='link@evil.example']")).to_contain_text("=HYPERLINK")
        page.locator("#rows tr[data-sender='plain@evil.example'] .who-name").click()
        expect(page.locator("#detail-facts")).to_contain_text("link (unencrypted http:)")
        expect(page.locator("#detail-links a.unsub .tag-http")).to_have_text("unencrypted")
        shoot(page, "hostile-links-1440-light")
        page.keyboard.press("Escape")
        # Nothing in the row is cut off: the marked link and its neighbours fit the actions cell.
        cell = page.locator("#rows tr[data-sender='plain@evil.example'] td.col-actions")
        fits = (
            "td => [...td.querySelectorAll('a, button')]"
            ".every(n => n.getBoundingClientRect().left >= td.getBoundingClientRect().left)"
        )
        assert cell.evaluate(fits)
        shoot(page, "hostile-links-row-1440-light", full_page=False)
        # The page's Export CSV, as the browser saves it, read back by a CSV reader: no cell starts a formula.
        with page.expect_download() as download:
            page.click("#export")
        saved = Path(download.value.path())
        with saved.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == len(HOSTILE)
        assert all(not cell.startswith(FORMULA_STARTS) for row in rows for cell in row.values())
        assert {row["sender"] for row in rows} >= {"'=1+1@evil.example", "link@evil.example"}
        assert console.problems == []


def test_the_offered_make_command_keeps_a_hostile_file_name_data(chromium: Browser, tmp_path: Path) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    for name in NAMES:
        (imports / name).write_bytes(b"From x Thu Jan  1 00:00:00 2020\n\n")
    with open(os.fsencode(imports) + b"/caf\xe9.mbox", "wb") as latin1:  # a Latin-1 name, not UTF-8
        latin1.write(b"From x Thu Jan  1 00:00:00 2020\n\n")
    root = scratch_checkout(tmp_path)
    settings = make_settings(tmp_path, command_style=CommandStyle.MAKE, host_import_dir=str(imports))
    with serve(settings) as url:
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#onboarding")).to_be_visible()
        expect(page.locator("#import-file option")).to_have_count(len(NAMES))
        note = page.locator("#import-unreadable")
        expect(note).to_be_visible()
        expect(note).to_contain_text("not valid UTF-8")
        expect(note.locator("code")).to_have_text("caf\\xe9.mbox")
        for name in NAMES:
            page.select_option("#import-file", name)
            command = page.locator("#import-command").inner_text()
            assert command.startswith("make import MBOX=") and name in command.replace("'\\''", "'")
            for pasted in (command.replace("make ", "make -n ", 1), command):
                result = paste(root, pasted)
                assert result.returncode == 0, result.stderr
            assert list(tmp_path.rglob("PWNED*")) == []
            assert recorded(root)[-1] == f"/mbox/{name}"
        shoot(page, "hostile-import-names-1440-light")
        assert console.problems == []
