"""The ingester reads a viewer's run request as untrusted input, and refuses import paths that leave the import
folder or follow a link on the way (the check-then-use race: it opens what it runs, with `O_NOFOLLOW`)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingester.runs.run_request import confine, expand, open_confined, parse_request, pinned_path
from shared.errors import InputFileError, UsageError
from tests.conftest import run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, import_file, query

NOW = 1_800_000_000.0
TOKEN = "0123456789abcdef" * 2


_json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=20,
)


def document(**changes: object) -> bytes:
    base: dict[str, object] = {
        "version": 1,
        "command": "import",
        "import_path": "Takeout/All mail.mbox",
        "resume_run_id": None,
        "launch_token": TOKEN,
        "written_at": NOW - 1,
    }
    base.update(changes)
    return json.dumps({k: v for k, v in base.items() if v != "DROP"}).encode()


def test_a_good_request_parses() -> None:
    request = parse_request(document(resume_run_id=7), kind="import", now=NOW)
    assert (request.import_path, request.resume_run_id, request.launch_token) == ("Takeout/All mail.mbox", 7, TOKEN)
    scan = parse_request(document(command="scan", import_path=None), kind="scan", now=NOW)
    assert (scan.command, scan.import_path) == ("scan", None)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe",
        b"[]",
        document(extra=1),
        document(version="DROP"),
        document(version=2),
        document(command="scan"),  # an import runner runs imports only
        document(launch_token="ABC"),
        document(launch_token=["x"]),
        document(written_at=NOW - 3600),  # left behind long ago
        document(written_at=NOW + 3600),
        document(written_at=True),
        document(resume_run_id=0),
        document(resume_run_id=2**63),
        document(resume_run_id=True),
        document(resume_run_id="3"),
        document(import_path=None),
        document(import_path=""),
        document(import_path="/etc/passwd"),
        document(import_path="../x.mbox"),
        document(import_path="a/./b.mbox"),
        document(import_path="a//b.mbox"),
        document(import_path="a\x00.mbox"),
        document(import_path="x" * 2000),
        document(version=True),  # equal to 1 in Python, not the version
        document(version=1.0),
        document(version="1"),
        b"[" * 2000 + b"]" * 2000,  # deeper than the JSON parser's stack
        b'{"version": ' + b"[" * 100_000,
        document(command=["import"]),
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(UsageError) as refused:
        parse_request(data, kind="import", now=NOW)
    assert refused.value.exit_code == 2 and "\n" not in str(refused.value)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        _json_documents.map(lambda d: json.dumps(d).encode()),
        # Every key present, each with any JSON value: what gets past the key check.
        st.fixed_dictionaries(dict.fromkeys(json.loads(document()), _json_documents)).map(
            lambda d: json.dumps(d).encode()
        ),
    )
)
def test_any_document_is_a_request_or_one_usage_line(data: bytes) -> None:
    try:
        parse_request(data, kind="import", now=NOW)
    except UsageError as exc:
        assert "\n" not in str(exc)


def test_a_folder_or_a_deep_document_at_the_request_path_is_one_usage_line(tmp_path: Path) -> None:
    requests = tmp_path / "requests"
    (requests / "import.json").mkdir(parents=True)
    (requests / "scan.json").write_bytes(b"[" * 2000 + b"]" * 2000)
    for kind, says in (("import", "is not a regular file"), ("scan", "nested too deep")):
        with pytest.raises(UsageError) as refused:
            expand(["run-request", kind], now=lambda: NOW, requests_dir=requests, imports_dir=tmp_path)
        assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_scan_request_carries_no_path() -> None:
    with pytest.raises(UsageError):
        parse_request(document(command="scan"), kind="scan", now=NOW)


@pytest.fixture
def imports(tmp_path: Path) -> Path:
    root = tmp_path / "imports"
    (root / "Takeout").mkdir(parents=True)
    (root / "Takeout" / "a.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    (tmp_path / "outside.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.mbox").write_bytes(b"From x Mon Jan  1 00:00:00 2024\n\n")
    return root


def test_a_plain_file_inside_is_confined_to_itself(imports: Path) -> None:
    assert confine(imports, imports / "Takeout" / "a.mbox") == imports / "Takeout" / "a.mbox"


@pytest.mark.parametrize("link_inside", [False, True])
def test_a_link_as_the_last_part_is_refused_even_to_a_file_inside(imports: Path, link_inside: bool) -> None:
    target = imports / "Takeout" / "a.mbox" if link_inside else imports.parent / "outside.mbox"
    (imports / "link.mbox").symlink_to(target)
    with pytest.raises(InputFileError, match="without following a link"):
        confine(imports, imports / "link.mbox")


def test_a_linked_folder_on_the_way_is_refused(imports: Path) -> None:
    # The attack: the viewer checked `Takeout/a.mbox`, then `Takeout` became a link to another folder.
    (imports / "Takeout").rename(imports / "Checked")
    (imports / "Takeout").symlink_to(imports.parent / "elsewhere")
    with pytest.raises(InputFileError):
        confine(imports, imports / "Takeout" / "a.mbox")


@pytest.mark.parametrize("path", ["../outside.mbox", "Takeout/../../outside.mbox", "/etc/passwd"])
def test_paths_leaving_the_folder_are_refused(imports: Path, path: str) -> None:
    with pytest.raises(InputFileError):
        confine(imports, imports / path if not path.startswith("/") else Path(path))


def test_a_fifo_or_a_folder_is_refused_without_hanging(imports: Path) -> None:
    os.mkfifo(imports / "pipe.mbox")
    with pytest.raises(InputFileError, match="not a regular file"):
        confine(imports, imports / "pipe.mbox")
    with pytest.raises(InputFileError, match="not a regular file"):
        confine(imports, imports / "Takeout")


def test_expand_turns_a_request_into_the_fixed_command_line(imports: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests"
    requests.mkdir()
    (requests / "import.json").write_bytes(document(import_path="Takeout/a.mbox", resume_run_id=4))
    argv = expand(["run-request", "import"], now=lambda: NOW, requests_dir=requests, imports_dir=imports)
    assert argv == [
        "import",
        str(imports / "Takeout" / "a.mbox"),
        "--confine-to",
        str(imports),
        "--resume",
        "4",
        "--launch-token",
        TOKEN,
        "--quiet",
    ]
    (requests / "scan.json").write_bytes(document(command="scan", import_path=None))
    assert expand(["run-request", "scan"], now=lambda: NOW, requests_dir=requests, imports_dir=imports) == [
        "scan",
        "--launch-token",
        TOKEN,
        "--quiet",
    ]
    assert expand(["runs", "--json"], now=lambda: NOW) == ["runs", "--json"]
    # A runner further along the pool reads its own file, never the first runner's.
    (requests / "scan-2.json").write_bytes(document(command="scan", import_path=None, resume_run_id=9))
    assert expand(["run-request", "scan", "2"], now=lambda: NOW, requests_dir=requests, imports_dir=imports) == [
        "scan",
        "--resume",
        "9",
        "--launch-token",
        TOKEN,
        "--quiet",
    ]
    with pytest.raises(UsageError, match="no run request"):
        expand(["run-request", "import", "2"], now=lambda: NOW, requests_dir=requests, imports_dir=imports)
    slots = (["run-request", "scan", s] for s in ("x", "1", "0", "02", "100", "-2", "../scan", "2 "))
    for bad in (["run-request"], ["run-request", "export"], *slots, ["run-request", "scan", "2", "3"]):
        with pytest.raises(UsageError):
            expand(bad, now=lambda: NOW, requests_dir=requests, imports_dir=imports)
    (requests / "scan.json").unlink()
    (requests / "scan.json").symlink_to(requests / "import.json")
    with pytest.raises(UsageError):
        expand(["run-request", "scan"], now=lambda: NOW, requests_dir=requests, imports_dir=imports)


def test_the_cli_refuses_a_link_out_of_the_folder_before_creating_the_database(tmp_path: Path) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    write_mbox(tmp_path / "secret.mbox", generate_messages(count=3, body_bytes=50))
    (imports / "a.mbox").symlink_to(tmp_path / "secret.mbox")
    db = tmp_path / "stats.db"
    result = run_cli("import", imports / "a.mbox", "--confine-to", imports, GMAIL_STATS_DB=str(db))
    assert result.returncode == 1 and "without following a link" in result.stderr, result.stderr
    assert not db.exists()
    write_mbox(imports / "b.mbox", generate_messages(count=3, body_bytes=50))
    token = "f" * 32
    done = run_cli(
        "import", imports / "b.mbox", "--confine-to", imports, "--launch-token", token, GMAIL_STATS_DB=str(db)
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(run_cli("runs", "--json", GMAIL_STATS_DB=str(db)).stdout)
    assert [(r["state"], r["messages_new"], r["mbox_path"]) for r in listed] == [("done", 3, str(imports / "b.mbox"))]


@pytest.mark.parametrize("workers", [0, 2])
def test_the_import_reads_the_file_that_was_checked_even_when_its_name_is_swapped(tmp_path: Path, workers: int) -> None:
    """The attack run's race, made certain: the name is swapped for a link to a file outside right after the check.
    The import reads through the descriptor the check opened (in the parse workers too), so the swap changes
    nothing."""
    imports = tmp_path / "imports"
    imports.mkdir()
    inside = write_mbox(imports / "a.mbox", generate_messages(count=30, body_bytes=50, senders=3))
    outside = write_mbox(tmp_path / "secret.mbox", generate_messages(count=7, body_bytes=50, senders=2))
    assert sum(outside.values()) != sum(inside.values())
    path, fd = open_confined(imports, imports / "a.mbox")
    try:
        pinned = pinned_path(fd)
        assert pinned is not None and pinned.parent == Path(f"/proc/{os.getpid()}/fd")
        (imports / "a.mbox").rename(imports / "moved.mbox")
        (imports / "a.mbox").symlink_to(tmp_path / "secret.mbox")
        db = tmp_path / "stats.db"
        result = import_file(db, path, workers=workers, read_path=pinned)
    finally:
        os.close(fd)
    assert result.messages_new == sum(inside.values())
    assert counts_of(db) == inside
    assert query(db, "SELECT mbox_path FROM ingest_runs") == [(str(imports / "a.mbox"),)]


@pytest.mark.slow
def test_real_imports_against_a_name_swapped_in_a_loop_never_read_outside(tmp_path: Path) -> None:
    """The attack run's race for real: while a thread swaps `a.mbox` between a file inside and a link to a file
    outside as fast as it can, confined CLI imports either refuse (they caught the link) or count the inside file.
    (Before the import read through the checked descriptor, 5 of 29 that passed the checks counted the outside one.)"""
    imports = tmp_path / "imports"
    imports.mkdir()
    inside = write_mbox(imports / "real.mbox", generate_messages(count=30, body_bytes=50, senders=3))
    outside = write_mbox(tmp_path / "secret.mbox", generate_messages(count=7, body_bytes=50, senders=2))
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                os.link(imports / "real.mbox", imports / ".file")
                os.replace(imports / ".file", imports / "a.mbox")
                os.symlink(tmp_path / "secret.mbox", imports / ".link")
                os.replace(imports / ".link", imports / "a.mbox")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    counted: list[dict[str, int]] = []
    try:
        for i in range(20):
            db = tmp_path / f"stats-{i}.db"
            result = run_cli("import", imports / "a.mbox", "--confine-to", imports, "--db", db, "--quiet")
            if result.returncode == 0:
                counted.append(counts_of(db))
            else:
                assert "without following a link" in result.stderr or "not a regular file" in result.stderr
    finally:
        stop.set()
        swapper.join(10)
    assert counted, "no import got past the checks: the race was not run"
    assert all(counts == inside for counts in counted) and inside != outside


def test_a_request_names_its_account_and_an_unattended_scan(tmp_path: Path) -> None:
    """What the viewer's Docker launcher writes for another account or a scheduled refresh, read back by a runner."""
    from shared.launch_request import LaunchCommand, LaunchRequest
    from viewer.launch.container_spec import request_document

    written = request_document(
        LaunchRequest(command=LaunchCommand.SCAN, launch_token=TOKEN, account="work", unattended=True), now=NOW
    )
    requests = tmp_path / "requests"
    requests.mkdir()
    (requests / "scan.json").write_bytes(written)
    assert expand(["run-request", "scan"], now=lambda: NOW, requests_dir=requests) == [
        "scan",
        "--account",
        "work",
        "--unattended",
        "--launch-token",
        TOKEN,
        "--quiet",
    ]
    plain = request_document(LaunchRequest(command=LaunchCommand.SCAN, launch_token=TOKEN), now=NOW)
    assert "account" not in json.loads(plain)  # the default account, attended: the document of before accounts
    for bad in (
        document(command="scan", import_path=None, account="../x", unattended=False),
        document(command="scan", import_path=None, account="work", unattended=1),
        document(account="work", unattended=True),  # an import is never unattended
        document(command="scan", import_path=None, account="work"),  # both keys or neither
    ):
        with pytest.raises(UsageError):
            parse_request(bad, kind=json.loads(bad)["command"], now=NOW)


def settings_document(**changes: object) -> bytes:
    base: dict[str, object] = {"command": "account", "import_path": None, "account": "old", "unattended": False}
    return document(**{"refresh": "hourly", "address": None, **base, **changes})


def test_an_import_runner_runs_a_settings_change_from_the_page(tmp_path: Path) -> None:
    """Under Docker the page's refresh or address change runs `gmail-stats account` in an import runner."""
    from shared.launch_request import LaunchCommand, LaunchRequest
    from viewer.launch.container_spec import request_document

    written = request_document(
        LaunchRequest(LaunchCommand.ACCOUNT, launch_token=TOKEN, account="old", address="-old.me@gmail.com"), now=NOW
    )
    requests = tmp_path / "requests"
    requests.mkdir()
    (requests / "import-2.json").write_bytes(written)
    assert expand(["run-request", "import", "2"], now=lambda: NOW, requests_dir=requests) == [
        "account",
        "--account",
        "old",
        "--address=-old.me@gmail.com",  # one word: an address may start with `-`
        "--quiet",
    ]
    request = parse_request(settings_document(account="default", refresh="daily"), kind="import", now=NOW)
    assert (request.command, request.account, request.refresh, request.address) == ("account", "default", "daily", None)
    (requests / "import.json").write_bytes(settings_document(account="default", refresh="off"))
    assert expand(["run-request", "import"], now=lambda: NOW, requests_dir=requests) == [
        "account",
        "--refresh",
        "off",
        "--quiet",
    ]


@pytest.mark.parametrize(
    "data",
    [
        settings_document(refresh=None),  # changes nothing
        settings_document(refresh="weekly"),
        settings_document(refresh=1),
        settings_document(address="not an address"),
        settings_document(address="a@b --list"),
        settings_document(address=["a@b.c"]),
        settings_document(account="../x"),
        settings_document(unattended=True),
        settings_document(import_path="a.mbox"),
        settings_document(resume_run_id=3),
        settings_document(address="DROP"),
        settings_document(extra=1),
        settings_document(launch_token="x"),
        settings_document(written_at=NOW - 3600),
        settings_document(version=2),
    ],
)
def test_a_bad_settings_change_is_refused(data: bytes) -> None:
    with pytest.raises(UsageError):
        parse_request(data, kind="import", now=NOW)


def test_a_scan_runner_never_runs_a_settings_change() -> None:
    with pytest.raises(UsageError):
        parse_request(settings_document(), kind="scan", now=NOW)
