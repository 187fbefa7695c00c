"""The commands and paths a person is shown are the ones that work where they are: `gmail-stats …` with the
viewer's paths, or, in the compose stack (GMAIL_STATS_COMMAND_STYLE=make, GMAIL_STATS_HOST_*), `make …` with the
host's paths, never the container's: on the page, in resume hints and in the scan's errors about its secrets."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from google.oauth2.credentials import Credentials
from playwright.sync_api import expect

from ingester.gmail.auth import load_client_config, save_token_cache
from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.errors import GmailAuthError
from shared.resume import CommandStyle, import_command, scan_command
from shared.runs import create_run, finish_run
from shared.schema.models import RunOutcome, RunState, Source
from tests.support.browser import browser, new_page, serve
from tests.support.factories import generate_messages, write_mbox
from tests.support.viewer import csrf_headers, make_settings, seed, viewer

HOST_FILE = "/home/me/Takeout/All mail (2024).mbox"  # what `make import MBOX=…` records on its run


@pytest.mark.parametrize(
    ("style", "path", "imports", "scans"),
    [
        (CommandStyle.CLI, "/m/a.mbox", "gmail-stats import /m/a.mbox", "gmail-stats scan"),
        (CommandStyle.CLI, "imports/All mail.mbox", "gmail-stats import 'imports/All mail.mbox'", "gmail-stats scan"),
        (CommandStyle.MAKE, "./imports/a.mbox", "make import MBOX=./imports/a.mbox", "make scan"),
        (CommandStyle.MAKE, "/h/it's.mbox", "make import MBOX='/h/it'\"'\"'s.mbox'", "make scan"),
    ],
)
def test_import_and_scan_commands(style: CommandStyle, path: str, imports: str, scans: str) -> None:
    assert (import_command(path=path, style=style), scan_command(style)) == (imports, scans)
    assert shlex.split(imports)[-1].removeprefix("MBOX=") == path  # pasted, the shell hands over the path as is


def _import_folder(tmp_path: Path) -> tuple[Path, int, int]:
    folder = tmp_path / "imports"
    folder.mkdir()
    mbox = folder / "All mail.mbox"
    write_mbox(mbox, generate_messages(count=3, body_bytes=10))
    info = mbox.stat()
    return folder, info.st_size, int(info.st_mtime)


def test_the_import_card_names_the_host_folder_and_make_under_docker(tmp_path: Path) -> None:
    folder, size, mtime = _import_folder(tmp_path)
    settings = make_settings(tmp_path, import_dir=folder, command_style="make", host_import_dir="./imports")
    with viewer(settings) as client:
        body = client.get("/api/imports").json()
    assert body == {
        "import_dir": "./imports",
        "import_dir_exists": True,
        "files": [
            {
                "path": "All mail.mbox",
                "size": size,
                "mtime_unix": mtime,
                "command": "make import MBOX='./imports/All mail.mbox'",
            }
        ],
        "unreadable_names": [],
        "import_command": "make import MBOX=path/to/file.mbox",
        "scan_command": "make scan",
        "runs_command": "make runs",
    }


def test_the_import_card_names_the_viewers_folder_and_the_cli_without_docker(tmp_path: Path) -> None:
    folder, size, mtime = _import_folder(tmp_path)
    with viewer(make_settings(tmp_path, import_dir=folder)) as client:
        body = client.get("/api/imports").json()
    db = str(tmp_path / "stats.db")  # the viewer's own database, so a pasted command fills this page
    command = shlex.join(["gmail-stats", "import", f"{folder}/All mail.mbox", "--db", db])
    assert body == {
        "import_dir": str(folder),
        "import_dir_exists": True,
        "files": [{"path": "All mail.mbox", "size": size, "mtime_unix": mtime, "command": command}],
        "unreadable_names": [],
        "import_command": f"gmail-stats import path/to/file.mbox --db {shlex.quote(db)}",
        "scan_command": f"gmail-stats scan --db {shlex.quote(db)}",
        "runs_command": f"gmail-stats runs --verbose --db {shlex.quote(db)}",
    }


@pytest.mark.parametrize(("style", "runs"), [("make", "make runs"), ("cli", "gmail-stats runs --verbose --db DB")])
def test_an_unreadable_database_names_the_persons_runs_command(tmp_path: Path, style: str, runs: str) -> None:
    (tmp_path / "stats.db").write_bytes(b"this is not a database" * 1000)
    runs = runs.replace("DB", shlex.quote(str(tmp_path / "stats.db")))
    with viewer(make_settings(tmp_path, command_style=style)) as client:
        answer = client.get("/api/senders")
    assert (answer.status_code, answer.json()) == (
        503,
        {"error": "db_unreadable", "message": f"the database could not be read; run `{runs}` in a terminal"},
    )


@pytest.mark.browser
@pytest.mark.slow
def test_the_onboarding_cards_show_the_make_commands_under_docker(tmp_path: Path) -> None:
    folder, _, _ = _import_folder(tmp_path)
    settings = make_settings(tmp_path, import_dir=folder, command_style="make", host_import_dir="./imports")
    with browser() as chromium, serve(settings) as url:
        page, console = new_page(chromium)
        page.goto(url)
        expect(page.locator("#scan-command")).to_have_text("make scan")
        expect(page.locator("#import-dir")).to_have_text("./imports")
        page.select_option("#import-file", "All mail.mbox")
        expect(page.locator("#import-command")).to_have_text("make import MBOX='./imports/All mail.mbox'")
        assert console.problems == []


def _cancelled_make_import(db: Path) -> int:
    seed(db)
    engine = writer_engine(db)
    with engine.begin() as conn:
        run_id = create_run(conn, source=Source.MBOX, pid=4242, now=1_700_000_100, mbox_path=HOST_FILE)
        finish_run(conn, run_id, state=RunState.CANCELLED, outcome=RunOutcome.PARTIAL, now=1_700_000_110)
    close_writer_keeping_sidecars(engine, db)
    return run_id


@pytest.mark.parametrize(
    ("style", "command"),
    [
        ("make", f"make import MBOX={shlex.quote(HOST_FILE)} RESUME=2"),
        ("cli", "gmail-stats import {file} --resume 2 --db {db}"),
    ],
)
def test_resuming_a_file_outside_the_import_folder_names_the_command_that_works_there(
    tmp_path: Path, style: str, command: str
) -> None:
    settings = make_settings(tmp_path, command_style=style, host_import_dir="./imports" if style == "make" else None)
    run_id = _cancelled_make_import(settings.db)
    with viewer(settings) as client:
        answer = client.post(
            "/api/runs", json={"source": "mbox", "resume_run_id": run_id}, headers=csrf_headers(client)
        )
    expected = command.format(file=shlex.quote(HOST_FILE), db=settings.db)
    assert (answer.status_code, answer.json()) == (
        422,
        {
            "error": "bad_resume",
            "message": f"run {run_id} read a file outside the import folder; resume it in a terminal with `{expected}`",
        },
    )


def test_a_missing_client_file_is_named_by_the_host_path_with_where_to_save_it(tmp_path: Path) -> None:
    missing = tmp_path / "credentials.json"
    with pytest.raises(GmailAuthError) as raised:
        load_client_config(missing, shown_dir="./secrets")
    message = str(raised.value)
    assert message.startswith("no OAuth client file at ./secrets/credentials.json: create a Desktop OAuth client")
    assert message.endswith("download its JSON as ./secrets/credentials.json")
    assert str(tmp_path) not in message and "--credentials" not in message
    with pytest.raises(GmailAuthError) as plain:
        load_client_config(missing)
    assert str(plain.value).startswith(f"no OAuth client file at {missing}: ")
    assert str(plain.value).endswith("pass it with --credentials or GMAIL_STATS_CREDENTIALS")


def test_a_token_cache_that_cannot_be_written_names_the_host_folder_and_the_fix(tmp_path: Path) -> None:
    creds = Credentials(token="t", refresh_token="r", client_id="c", client_secret="s")  # type: ignore[no-untyped-call]
    unwritable = tmp_path / "no such folder" / "tokencache.json"
    with pytest.raises(GmailAuthError) as raised:
        save_token_cache(unwritable, creds, shown_dir="./secrets")
    assert str(raised.value) == (
        "cannot write the token cache ./secrets/tokencache.json: No such file or directory; "
        "give the containers' user that folder with `make secrets`"
    )


def test_a_page_import_recorded_under_the_hosts_folder_is_shown_inside_the_import_folder(
    tmp_path: Path,
) -> None:
    """Under Docker a runner records the host's path (`./imports/…`); the viewer, which sees /imports, still knows
    the file: the run shows its place in the import folder. (The runner's resume of it: test_resume.py.)"""
    folder = tmp_path / "imports"
    (folder / "2024").mkdir(parents=True)
    write_mbox(folder / "2024" / "All mail.mbox", generate_messages(count=3, body_bytes=10))
    settings = make_settings(tmp_path, import_dir=folder, command_style="make", host_import_dir="./imports")
    seed(settings.db)
    engine = writer_engine(settings.db)
    with engine.begin() as conn:
        run_id = create_run(
            conn, source=Source.MBOX, pid=4242, now=1_700_000_100, mbox_path="./imports/2024/All mail.mbox"
        )
        finish_run(conn, run_id, state=RunState.CANCELLED, outcome=RunOutcome.PARTIAL, now=1_700_000_110)
    close_writer_keeping_sidecars(engine, settings.db)
    with viewer(settings) as client:
        shown = [run["mbox_path"] for run in client.get("/api/runs").json()["runs"] if run["run_id"] == run_id]
    assert shown == ["2024/All mail.mbox"]
