"""The read side of the JSON API through the real app on real database files."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.runs import create_run
from shared.schema.migrations import LATEST_VERSION
from shared.schema.models import Source
from tests.support.viewer import SENDERS, file_digests, make_settings, seed, viewer

NOW = 1_800_000_000


def _sender(row: tuple[object, ...]) -> dict[str, object]:
    keys = ("sender", "display_name", "mails_sent", "first_seen_unix", "last_seen_unix", "bytes", "unread")
    return {**dict(zip(keys, row[:7], strict=True)), "list_unsubscribe": row[7]}


DOMAINS = {"news@shop.example": "shop.example", "100%_real@odd.example": "odd.example"}
GMAIL = "https://mail.google.com/mail/u/0/#search/from%3A"


def _row(row: tuple[object, ...]) -> dict[str, object]:
    """The `/api/senders` shape of a `SENDERS` row."""
    sender, mails, unread = str(row[0]), int(row[2]), int(row[6])  # type: ignore[call-overload]
    return {
        **_sender(row),
        "domain": DOMAINS.get(sender, "example.com" if sender.endswith("@example.com") else ""),
        "unread_ratio": round(unread / mails, 4),
        "unsubscribe_url": row[8] if len(row) > 8 else None,
        "one_click": bool(row[9]) if len(row) > 9 else False,
        "gmail_url": GMAIL + sender.replace("%", "%25").replace("@", "%40"),
    }


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


def test_senders_default_page_whole_body(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(
        make_settings(tmp_path),
    ) as client:
        body = client.get("/api/senders", params={"limit": 3}).json()
    ordered = sorted(SENDERS, key=lambda r: (-r[2], r[0]))
    assert body == {
        "total": 6,
        "total_exact": True,
        "matched_messages": 70,
        "senders": [_row(r) for r in ordered[:3]],
        "total_messages": 70,
        "total_senders": 6,
        "top_sender": _row(ordered[0]),
        "generated_at_unix": body["generated_at_unix"],
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"sort": "sender", "order": "asc"}, ["", "100%_real@odd.example", "12345", "alice@example.com"]),
        (
            {"sort": "sender", "order": "desc", "limit": 3},
            ["news@shop.example", "bob@example.com", "alice@example.com"],
        ),
        ({"sort": "mails_sent", "order": "asc"}, ["", "100%_real@odd.example", "12345", "bob@example.com"]),
        (
            {"sort": "last_seen", "order": "desc", "limit": 3},
            ["news@shop.example", "bob@example.com", "alice@example.com"],
        ),
        ({"sort": "last_seen", "order": "asc", "limit": 2}, ["12345", ""]),
        ({"sort": "bytes", "order": "desc", "limit": 2}, ["news@shop.example", "bob@example.com"]),
        ({"offset": 1, "limit": 2}, ["alice@example.com", "bob@example.com"]),
        ({"offset": 6}, []),
        ({"q": "EXAMPLE.com"}, ["alice@example.com", "bob@example.com"]),
        ({"q": "shop news"}, ["news@shop.example"]),
        ({"q": "%"}, ["100%_real@odd.example"]),
        ({"q": "_"}, ["100%_real@odd.example"]),
        ({"q": "234"}, ["12345"]),
    ],
)
def test_senders_search_sort_and_paging(
    tmp_path: Path, db_path: Path, params: dict[str, str | int], expected: list[str]
) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/senders", params={"limit": 4, **params}).json()
    assert [s["sender"] for s in body["senders"]] == expected
    if "q" in params:
        assert body["total"] == len(expected)
        assert body["total_messages"] == 70  # the whole table, not the search


@pytest.mark.parametrize(
    "query",
    ["sort=subject", "order=up", "limit=0", "limit=501", "offset=-1", "limit=ten", "q=" + "x" * 201],
)
def test_senders_rejects_bad_parameters(tmp_path: Path, db_path: Path, query: str) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get(f"/api/senders?{query}")
    assert response.status_code == 422
    assert set(response.json()) == {"error", "message"}
    assert response.json()["error"] == "bad_request"


def test_summary_is_the_export_document(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        body = client.get("/api/summary").json()
    ordered = sorted(SENDERS, key=lambda r: (-r[2], r[0]))
    assert body == {
        "total_messages": 70,
        "senders": [_sender(r) for r in ordered],
        "generated_at_unix": body["generated_at_unix"],
    }


def test_export_csv_streams_the_whole_table(tmp_path: Path, db_path: Path) -> None:
    many = [(f"s{i:05d}@bulk.example", f"Bulk {i}", i % 97 + 1, 1, 2, i, 0, 0) for i in range(5000)]
    seed(db_path, senders=many)
    with viewer(make_settings(tmp_path)) as client:
        response = client.get("/api/export.csv")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="gmail-stats-senders.csv"'
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 5000
    assert rows[0] == {
        "sender": "s00096@bulk.example",
        "display_name": "Bulk 96",
        "domain": "bulk.example",
        "mails_sent": "97",
        "unread": "0",
        "unread_ratio": "0.0",
        "bytes": "96",
        "first_seen": "1970-01-01T00:00:01Z",
        "last_seen": "1970-01-01T00:00:02Z",
        "list_unsubscribe": "0",
        "unsubscribe_url": "",
        "one_click": "0",
        "gmail_url": GMAIL + "s00096%40bulk.example",
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
