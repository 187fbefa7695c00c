"""The JSON API's view of the database, its runs and the import folder, through the real app on real files: a missing
database (onboarding, never created), an empty, outdated, too new or busy one, runs and status without private
columns, mixed sources, the import folder's listing, and reads that leave the files byte-identical.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import create_run
from shared.schema.migrations import LATEST_VERSION
from shared.schema.models import Source
from tests.support.viewer import file_digests, make_settings, seed, viewer

NOW = 1_800_000_000


def test_missing_database_is_onboarding_and_never_created(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with viewer(settings) as client:
        status = client.get("/api/status").json()
        senders = client.get("/api/senders").json()
        assert client.get("/api/runs").json()["runs"] == []
        assert client.get("/api/summary").json()["senders"] == []
        assert client.get("/api/export.csv").text == (
            "sender,display_name,domain,mails_sent,unread,unread_ratio,bytes,first_seen,last_seen,list_unsubscribe,"
            "unsubscribe_url,one_click,gmail_url\n"
        )
    assert status["db"] == "missing"
    assert status["active_run"] is None and status["last_run"] is None
    assert status["ingest_lock_held"] is False
    assert len(bytes.fromhex(status["csrf_token"])) == 32
    assert {k: v for k, v in senders.items() if k != "generated_at_unix"} == {
        "total": 0,
        "total_exact": True,
        "matched_messages": 0,
        "senders": [],
        "total_messages": 0,
        "total_senders": 0,
        "top_sender": None,
    }
    assert list(tmp_path.iterdir()) == []  # no database, no sidecar, no lock file


def test_an_account_created_while_the_viewer_serves_is_listed_at_the_next_request(tmp_path: Path) -> None:
    """The data folder is the list of accounts, read when asked: no listing kept from a moment ago hides one."""
    seed(tmp_path / "stats.db")
    with viewer(make_settings(tmp_path)) as client:

        def listed() -> list[str]:
            return [account["name"] for account in client.get("/api/accounts").json()["accounts"]]

        assert listed() == ["default"]
        seed(tmp_path / "stats.work.db")  # what an import into a new account `work` leaves, while the page polls
        assert listed() == ["default", "work"]
        assert client.get("/api/status", params={"account": "work"}).json()["db"] == "ready"
        (tmp_path / "stats.work.db").unlink()
        assert listed() == ["default"]


def test_empty_and_outdated_databases(tmp_path: Path, db_path: Path) -> None:
    db_path.write_bytes(b"")  # a zero-byte file is a valid, table-less SQLite database
    with viewer(make_settings(tmp_path)) as client:
        assert client.get("/api/status").json()["db"] == "empty"
        assert client.get("/api/senders").json()["total"] == 0
    seed(db_path, senders=[])
    with viewer(make_settings(tmp_path)) as client:
        assert client.get("/api/status").json()["db"] == "empty"
        engine = writer_engine(db_path)
        with engine.begin() as conn:
            conn.exec_driver_sql("PRAGMA user_version = 2")
        close_writer_keeping_sidecars(engine, db_path)
        assert client.get("/api/status").json()["db"] == "outdated"
        assert client.get("/api/runs").json()["runs"] == []


def test_too_new_database_is_refused_with_503(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    close_writer_keeping_sidecars(engine, db_path)
    with viewer(make_settings(tmp_path)) as client:
        assert client.get("/api/status").json()["db"] == "too_new"
        response = client.get("/api/senders")
    assert response.status_code == 503
    assert response.json() == {
        "error": "db_too_new",
        "message": "the database was written by a newer gmail-stats; upgrade the viewer",
    }


def test_runs_hide_private_columns_and_page(tmp_path: Path, db_path: Path) -> None:
    seed(db_path, finished_runs=3)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/runs", params={"limit": 2}).json()
        bad = [client.get(f"/api/runs?limit={n}") for n in (0, 101)]
    assert [run["run_id"] for run in body["runs"]] == [3, 2]
    assert body["runs"][0] == {
        "run_id": 3,
        "source": "mbox",
        "state": "done",
        "started_at_unix": 1_700_000_002,
        "updated_at_unix": 1_700_000_022,
        "finished_at_unix": 1_700_000_022,
        "messages_seen": 70,
        "messages_new": 70,
        "messages_skipped": 0,
        "messages_excluded": 0,
        "total_estimate": None,
        "bytes_total": 1000,
        "bytes_done": 1000,
        "mbox_path": "2.mbox",  # outside the import folder: only the file name
        "error_kind": None,
        "error": None,
        "auth_url": None,
        "warnings_count": 0,
        "warnings_tail": [],
        "outcome": "complete",
        "owned": False,
        "stopped_unexpectedly": False,
        "unfetched": 0,
    }
    assert isinstance(body["now_unix"], int)
    assert [r.status_code for r in bad] == [422, 422]
    assert "secret-fingerprint" not in json.dumps(body)
    assert "/nowhere" not in json.dumps(body) and "4242" not in json.dumps(body)  # no host path, no PID


def test_status_reports_last_run_and_a_dead_ingesters_open_row_as_history(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        create_run(conn, source=Source.MBOX, pid=1, now=NOW, launch_token="tok", mbox_fingerprint="fp")
    close_writer_keeping_sidecars(engine, db_path)
    with viewer(make_settings(tmp_path)) as client:
        status = client.get("/api/status").json()
    assert status["db"] == "ready"
    assert status["active_run"] is None  # no lock held: nobody is running it
    assert status["last_run"]["run_id"] == 2 and status["last_run"]["state"] == "running"  # the row untouched
    assert status["last_run"]["stopped_unexpectedly"] is True  # derived: open, and nobody holds the lock
    assert "launch_token" not in status["last_run"] and "mbox_fingerprint" not in status["last_run"]
    assert status["owns_active_run"] is False
    assert (status["rate_per_sec"], status["eta_seconds"]) == (None, None)
    assert (status["mixed_sources"], status["unrepaired_count"]) == (False, 0)


def test_mixed_sources_counts_scan_rows_without_message_id(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        for i in range(3):
            conn.execute(
                text("INSERT INTO seen_mails (mail_id, sender, source) VALUES (:m, 'a@example.com', 'gmail_api')"),
                {"m": f"18c{i}"},
            )
        conn.execute(
            text(
                "INSERT INTO seen_mails (mail_id, rfc_message_id, sender, source) "
                "VALUES ('mid:x@y', 'x@y', 'a@example.com', 'gmail_api')"
            )
        )
        # The totals cache is keyed on run progress: a new run row is how the data changes.
        create_run(conn, source=Source.GMAIL_API, pid=1, now=NOW)
    close_writer_keeping_sidecars(engine, db_path)
    with viewer(make_settings(tmp_path)) as client:
        status = client.get("/api/status").json()
    assert (status["mixed_sources"], status["unrepaired_count"]) == (True, 3)


def test_imports_lists_nested_mbox_files_only(tmp_path: Path) -> None:
    imports = tmp_path / "imports"
    nested = imports / "Takeout" / "Mail"
    nested.mkdir(parents=True)
    (nested / "All mail Including Spam and Trash.mbox").write_bytes(b"From x Thu Jan  1 00:00:00 2020\n\n")
    (imports / "top.MBOX").write_bytes(b"x" * 10)
    (imports / "notes.txt").write_text("no")
    (imports / ".hidden.mbox").write_text("no")
    outside = tmp_path / "outside.mbox"
    outside.write_text("secret")
    (imports / "link.mbox").symlink_to(outside)
    (imports / "deep" / "a" / "b" / "c" / "d").mkdir(parents=True)
    (imports / "deep" / "a" / "b" / "c" / "d" / "too-deep.mbox").write_text("x")
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/imports").json()
    assert [(f["path"], f["size"]) for f in body["files"]] == [
        ("Takeout/Mail/All mail Including Spam and Trash.mbox", 33),
        ("top.MBOX", 10),
    ]
    assert all(isinstance(f["mtime_unix"], int) for f in body["files"])


def test_imports_lists_names_that_are_not_utf8_apart_escaped(tmp_path: Path) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    (imports / "good.mbox").write_bytes(b"From x Thu Jan  1 00:00:00 2020\n\n")
    raw = os.fsencode(imports)
    with open(raw + b"/bad\xff name.mbox", "wb") as handle:
        handle.write(b"From x Thu Jan  1 00:00:00 2020\n\n")
    os.mkdir(raw + b"/dir\xfe")
    with open(raw + b"/dir\xfe/inner.mbox", "wb") as handle:
        handle.write(b"From x Thu Jan  1 00:00:00 2020\n\n")
    with viewer(make_settings(tmp_path)) as client:
        response = client.get("/api/imports")
    assert response.status_code == 200
    body = response.json()
    assert [f["path"] for f in body["files"]] == ["good.mbox"]
    assert body["unreadable_names"] == ["bad\\xff name.mbox", "dir\\xfe/inner.mbox"]


def test_imports_without_the_folder_is_an_empty_list(tmp_path: Path) -> None:
    with viewer(make_settings(tmp_path)) as client:
        missing = client.get("/api/imports").json()
        (tmp_path / "imports").mkdir()
        empty = client.get("/api/imports").json()
    assert (missing["files"], missing["import_dir_exists"]) == ([], False)
    assert (empty["files"], empty["import_dir_exists"]) == ([], True)


def test_reads_leave_the_database_and_sidecars_byte_identical(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    (tmp_path / "imports").mkdir()
    before = file_digests(db_path)
    assert set(before) == {"stats.db", "stats.db-wal", "stats.db-shm"}
    with viewer(make_settings(tmp_path)) as client:
        for url in ("/api/status", "/api/senders?q=a&sort=bytes", "/api/summary", "/api/export.csv", "/api/runs"):
            for _ in range(3):
                assert client.get(url).status_code == 200
    assert file_digests(db_path) == before


def test_busy_database_is_a_503_without_details(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    # A writer in exclusive locking mode keeps every reader out: after the busy timeout, the API says "busy"
    # (the page keeps its data and retries) and shows neither SQL nor the path.
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("UPDATE senders SET unread = unread")
        with viewer(make_settings(tmp_path)) as client:
            response = client.get("/api/senders")
    finally:
        holder.close()
    assert response.status_code == 503
    assert response.json() == {
        "error": "busy",
        "message": "the database is busy (an ingester is writing); retrying shortly",
    }
