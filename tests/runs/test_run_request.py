"""The ingester reads a viewer's run request as untrusted input: one usage line for anything but a well-formed
request of its runner's kind, and a fixed command line for a good one (imports, scans, settings changes).

The import path it names is confined to the import folder: test_import_confinement.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingester.runs.run_request import expand, parse_request
from shared.errors import UsageError

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
