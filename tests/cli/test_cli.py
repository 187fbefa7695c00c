"""The `gmail-stats` command line as a user meets it: real processes, exit codes, JSON and CSV output."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.runs import PUBLIC_RUN_COLUMNS
from shared.text.csv_cells import SENDER_CSV_COLUMNS, iso_date
from tests.conftest import REPO_ROOT, run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.viewer import make_settings, viewer


@pytest.fixture
def imported(tmp_path: Path, db_path: Path) -> dict[str, int]:
    mbox = tmp_path / "mail.mbox"
    expected = write_mbox(mbox, generate_messages(count=120, body_bytes=80, senders=15, spam_every=10))
    result = run_cli("import", mbox, "--db", db_path)
    assert result.returncode == 0, result.stderr
    return expected


@pytest.mark.parametrize(
    ("make_path", "message"),
    [
        (lambda d: d / "missing.mbox", "no such file"),
        (lambda d: d, "not a regular file"),
        (lambda d: d / "notes.txt", "not an mbox file"),
    ],
)
def test_bad_paths_fail_clearly_and_write_nothing(
    tmp_path: Path, make_path: Callable[[Path], Path], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("Subject: hello\n\nFrom here on, prose.\n")
    path = make_path(tmp_path)
    db = tmp_path / "stats.db"
    result = run_cli("import", path, "--db", db)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not db.exists() and not Path(f"{db}.ingest.lock").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli("import").returncode == 2
    assert run_cli("frobnicate").returncode == 2
    assert run_cli("runs", "--limit", "x").returncode == 2
    assert run_cli("runs", "--limit", "0", "--db", tmp_path / "x.db").returncode in (1, 2)


def test_runs_json_has_every_public_column(db_path: Path, imported: dict[str, int]) -> None:
    result = run_cli("runs", "--json", "--db", db_path)
    (run,) = json.loads(result.stdout)
    assert tuple(run) == PUBLIC_RUN_COLUMNS
    assert "resume_token" not in run and "mbox_fingerprint" not in run
    assert run["source"] == "mbox" and run["state"] == "done" and run["outcome"] == "complete"
    assert run["messages_new"] == sum(imported.values())
    assert run["messages_excluded"] == 12
    assert run["bytes_done"] == run["bytes_total"] > 0


def test_runs_text_and_limit(tmp_path: Path, db_path: Path, imported: dict[str, int]) -> None:
    mbox = tmp_path / "mail.mbox"
    assert run_cli("import", mbox, "--db", db_path).returncode == 0
    result = run_cli("runs", "--limit", "1", "--db", db_path)
    assert result.returncode == 0
    assert result.stdout.startswith("#2 mbox done/complete: 120 seen, 0 new")
    assert result.stdout.count("\n") == 1


def test_export_json_is_the_summary_document(db_path: Path, imported: dict[str, int]) -> None:
    document = json.loads(run_cli("export", "--db", db_path).stdout)
    assert set(document) == {"total_messages", "senders", "generated_at_unix"}
    assert document["total_messages"] == sum(imported.values())
    assert {s["sender"]: s["mails_sent"] for s in document["senders"]} == imported
    order = [(-s["mails_sent"], s["sender"]) for s in document["senders"]]
    assert order == sorted(order)


def test_export_csv_to_a_file(tmp_path: Path, db_path: Path, imported: dict[str, int]) -> None:
    target = tmp_path / "senders.csv"
    result = run_cli("export", "--format", "csv", "--output", target, "--db", db_path)
    assert result.returncode == 0 and result.stdout == ""
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    as_json = json.loads(run_cli("export", "--db", db_path).stdout)["senders"]
    # The page's format: its 13 columns, ISO dates (`shared.text.csv_cells`), the same rows in the same order.
    assert list(rows[0]) == list(SENDER_CSV_COLUMNS)
    shared = ("sender", "display_name", "mails_sent", "bytes", "unread", "list_unsubscribe")
    assert [{k: r[k] for k in shared} for r in rows] == [{k: str(s[k]) for k in shared} for s in as_json]
    assert [(r["first_seen"], r["last_seen"]) for r in rows] == [
        (iso_date(s["first_seen_unix"]), iso_date(s["last_seen_unix"])) for s in as_json
    ]
    with viewer(make_settings(db_path.parent, db=db_path)) as client:
        assert client.get("/api/export.csv").text == target.read_text()


def test_reading_commands_on_a_missing_database(tmp_path: Path) -> None:
    result = run_cli("export", "--db", tmp_path / "none.db")
    assert result.returncode == 1
    assert "no database at" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_db_from_environment_and_python_m(tmp_path: Path, db_path: Path, imported: dict[str, int]) -> None:
    via_env = run_cli("export", GMAIL_STATS_DB=str(db_path))
    assert json.loads(via_env.stdout)["total_messages"] == sum(imported.values())
    import subprocess

    script = subprocess.run(
        [str(Path(sys.executable).with_name("gmail-stats")), "runs", "--db", str(db_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert script.stdout == run_cli("runs", "--db", db_path).stdout


def test_quiet_prints_nothing_and_verbose_prints_warnings(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "mail.mbox"
    mbox.write_bytes(b"junk\nFrom x Fri Dec 04 20:33:24 2020\nFrom: a@b\n\nx\n")
    quiet = run_cli("import", mbox, "--db", db_path, "--quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    verbose = run_cli("import", mbox, "--db", db_path, "--verbose")
    assert "warning: skipped bytes 0-5: no valid header line" in verbose.stderr


def test_warnings_are_counted_in_the_summary_and_listed_by_runs_verbose(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "mail.mbox"
    mbox.write_bytes(b"From x Fri Dec 04 20:33:24 2020\nFrom: =?utf-7?B?K2dtQ?= <a@b.example>\n\nx\n")
    plain = run_cli("import", mbox, "--db", db_path)
    assert plain.returncode == 0, plain.stderr
    assert "warning:" not in plain.stderr
    assert plain.stderr.rstrip().endswith(
        f"0 skipped, 1 warning (listed by `gmail-stats runs --verbose --db {db_path}` and on the page)"
    )
    listed = run_cli("runs", "--verbose", "--db", db_path)
    assert listed.stdout.splitlines()[1:] == [
        "    warning: bytes 0-73: sender header: broken encoded-word (charset 'utf-7'); counted as is"
    ]
    assert run_cli("runs", "--db", db_path).stdout.count("\n") == 1
    # Under Docker the ingester says the host's verb (the import is new to this database: same warning again).
    under_docker = run_cli("import", mbox, "--db", tmp_path / "other.db", GMAIL_STATS_COMMAND_STYLE="make")
    assert under_docker.stderr.rstrip().endswith("1 warning (listed by `make runs` and on the page)")


def test_help_has_examples() -> None:
    for command in ("import", "runs", "export"):
        result = run_cli(command, "--help")
        assert result.returncode == 0 and "Example:" in result.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("import", "x.mbox", "--resume", "9223372036854775808"), "not a run id (1 to 9223372036854775807"),
        (("import", "x.mbox", "--resume", "0"), "not a run id"),
        (("scan", "--resume", "-3"), "not a run id"),
        (("scan", "--resume", "abc"), "not a run id (a whole number)"),
        (("runs", "--limit", "99999999999999999999"), "out of range"),
        (("import",), "the following arguments are required: path"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    result = run_cli(*args, "--db", tmp_path / "stats.db")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert not (tmp_path / "stats.db").exists()
