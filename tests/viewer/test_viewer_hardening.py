"""Hardening found by an attack run: out-of-range ids, oversized bodies, a FIFO at the lock path, bad database
contents, file modes, and what the API leaves out (host paths, PIDs)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.lock import is_lock_held, lock_path_for
from shared.resume import CommandStyle, runs_command
from tests.conftest import run_cli
from tests.support.viewer import SENDERS, csrf_headers, make_settings, mbox_bytes, seed, state_of, viewer
from viewer.web.security import MAX_BODY_BYTES

TOO_BIG = 2**63


def _unreadable(db_path: Path, what: str = "holds data the viewer cannot read") -> dict[str, str]:
    """The 503 body, naming the runs command with the viewer's own database."""
    runs = runs_command(CommandStyle.CLI, str(db_path))
    return {"error": "db_unreadable", "message": f"the database {what}; run `{runs}` in a terminal"}


def _write(db_path: Path, *statements: str) -> None:
    engine = writer_engine(db_path)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))
    close_writer_keeping_sidecars(engine, db_path)


# -- ids and offsets a 64-bit SQLite integer cannot hold -----------------------------------------------------------


@pytest.mark.parametrize("value", [TOO_BIG, 2**64, 10**30])
def test_ids_and_offsets_beyond_64_bits_are_422(tmp_path: Path, db_path: Path, value: int) -> None:
    seed(db_path)
    with viewer(make_settings(tmp_path)) as client:
        headers = csrf_headers(client)
        responses = {
            "log": client.get(f"/api/runs/{value}/log"),
            "offset": client.get(f"/api/senders?offset={value}"),
            "cancel": client.post(f"/api/runs/{value}/cancel", json={}, headers=headers),
            "resume": client.post("/api/runs", json={"source": "mbox", "resume_run_id": value}, headers=headers),
        }
    for name, response in responses.items():
        assert response.status_code == 422, (name, response.text)
        body = response.json()
        assert set(body) == {"error", "message"} and body["error"] == "bad_request", name
        assert "less than or equal to 9223372036854775807" in body["message"], name


def test_the_largest_64_bit_values_are_answered_normally(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    largest = TOO_BIG - 1
    with viewer(make_settings(tmp_path)) as client:
        headers = csrf_headers(client)
        page = client.get(f"/api/senders?offset={largest}")
        log = client.get(f"/api/runs/{largest}/log")
        cancel = client.post(f"/api/runs/{largest}/cancel", json={}, headers=headers)
        resume = client.post("/api/runs", json={"source": "mbox", "resume_run_id": largest}, headers=headers)
    assert (page.status_code, page.json()["senders"], page.json()["total"]) == (200, [], len(SENDERS))
    assert (log.status_code, log.json()["error"]) == (404, "not_owned")
    assert (cancel.status_code, cancel.json()["error"]) == (409, "not_owned")
    assert resume.status_code == 422
    assert resume.json() == {"error": "bad_resume", "message": f"there is no run {largest}"}


# -- request bodies ---------------------------------------------------------------------------------------------------


def test_a_declared_large_body_is_413_before_it_is_read(tmp_path: Path) -> None:
    with viewer(make_settings(tmp_path)) as client:
        headers = {**csrf_headers(client), "Content-Length": str(2**30)}
        response = client.post("/api/runs", content=b"{}", headers=headers)
        just_fits = client.post(
            "/api/runs",
            content=b'{"source": "mbox", "path": "' + b"x" * (MAX_BODY_BYTES - 40) + b'"}',
            headers=csrf_headers(client),
        )
    assert response.status_code == 413
    assert response.json() == {"error": "too_large", "message": "the request body is larger than 16 KiB"}
    assert response.headers["content-security-policy"] == "default-src 'self'; frame-ancestors 'none'"
    assert response.headers["connection"] == "close"
    assert just_fits.status_code == 422  # read and validated: the path is too long, not the body


# -- the lock probe ------------------------------------------------------------------------------------------------


def test_a_fifo_at_the_lock_path_does_not_hang_the_viewer(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    os.mkfifo(lock_path_for(db_path))
    answers: list[Any] = []

    def probe() -> None:
        answers.append(is_lock_held(db_path))
        with viewer(make_settings(tmp_path)) as client:
            answers.append(client.get("/api/status").json()["ingest_lock_held"])

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # unblock the hung open() so the test process can end
        with open(lock_path_for(db_path), "wb"):
            pass
        pytest.fail("the lock probe hung on a FIFO")
    assert answers == [False, False]


# -- bad database contents ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tail", ["not json", "null", "7", "[1, 2]", '{"a": 1}', '"text"'])
def test_malformed_warnings_tail_is_never_a_500(tmp_path: Path, db_path: Path, tail: str) -> None:
    seed(db_path)
    _write(db_path, f"UPDATE ingest_runs SET warnings_tail = '{tail}'")
    with viewer(make_settings(tmp_path)) as client:
        headers = csrf_headers_without_status(client)
        responses = [
            client.get("/api/status"),
            client.get("/api/runs"),
            client.get("/api/runs/1/log"),
            client.post("/api/runs/1/cancel", json={}, headers=headers),
            client.post("/api/runs", json={"source": "mbox", "resume_run_id": 1}, headers=headers),
        ]
        senders = client.get("/api/senders")
    # Unparseable or not a list: every route that reads the run says so. Parseable oddities (a list of numbers,
    # an object, a string) are either shown as text or refused the same way; never a 500.
    if tail in ("not json", "null", "7"):
        assert [r.status_code for r in responses] == [503] * 5
    for response in responses:
        assert response.status_code in (200, 404, 409, 422, 503), response.request.url
        if response.status_code == 503:
            assert response.json() == _unreadable(db_path), response.request.url
    assert senders.status_code == 200  # the stats themselves are still readable


def csrf_headers_without_status(client: Any) -> dict[str, str]:
    """The token from the viewer's state: `/api/status` itself is what these tests break."""
    token = state_of(client).csrf_token
    return {"X-Gmail-Stats-Csrf": token, "Content-Type": "application/json"}


@pytest.mark.parametrize("table", ["senders", "ingest_runs", "seen_mails"])
def test_a_missing_table_is_a_503(tmp_path: Path, db_path: Path, table: str) -> None:
    seed(db_path)
    _write(db_path, f"DROP TABLE {table}")
    with viewer(make_settings(tmp_path)) as client:
        responses = {url: client.get(url) for url in ("/api/status", "/api/senders", "/api/summary", "/api/runs")}
        export = client.get("/api/export.csv")
    failed = {url: r.json() for url, r in responses.items() if r.status_code != 200}
    assert failed, "dropping a table must show somewhere"
    for url, response in responses.items():
        assert response.status_code in (200, 503), url
        if response.status_code == 503:
            assert response.json()["error"] == "db_unreadable", url
    assert export.status_code in (200, 503)
    if table == "senders":
        assert export.status_code == 503 and export.json()["error"] == "db_unreadable"


def test_a_wrongly_typed_value_is_a_503(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    _write(db_path, "UPDATE senders SET mails_sent = 'many' WHERE sender = 'alice@example.com'")
    with viewer(make_settings(tmp_path)) as client:
        responses = [client.get("/api/senders"), client.get("/api/summary")]
    for response in responses:
        assert (response.status_code, response.json()["error"]) == (503, "db_unreadable")


def test_a_file_that_is_not_a_database_is_a_503(tmp_path: Path, db_path: Path) -> None:
    db_path.write_bytes(b"this is not an SQLite file, just some bytes\n" * 200)
    with viewer(make_settings(tmp_path)) as client:
        responses = [client.get(url) for url in ("/api/status", "/api/senders", "/api/export.csv", "/api/runs")]
    for response in responses:
        assert response.status_code == 503, response.request.url
        assert response.json() == _unreadable(db_path, "could not be read")


def _corrupt_the_senders_table(db_path: Path) -> None:
    """Overwrites one leaf page of `senders` a third of the way through the table (the table shares the file with
    its indexes, so the page is looked up in `dbstat`)."""
    engine = writer_engine(db_path)
    with engine.connect() as conn:
        page_size = conn.exec_driver_sql("PRAGMA page_size").scalar_one()
        leaves = [
            int(row[0])
            for row in conn.exec_driver_sql(
                "SELECT pageno FROM dbstat WHERE name = 'senders' AND pagetype = 'leaf' ORDER BY path"
            )
        ]
    close_writer_keeping_sidecars(engine, db_path)
    data = bytearray(db_path.read_bytes())
    victim = leaves[len(leaves) // 3]
    data[(victim - 1) * page_size : victim * page_size] = b"\xff" * page_size
    db_path.write_bytes(bytes(data))


def test_export_is_never_a_cut_off_200(tmp_path: Path, db_path: Path) -> None:
    many = [(f"s{i:05d}@bulk.example", f"Bulk {i}", i % 97, 1, 2, i, 0, 0) for i in range(20_000)]
    seed(db_path, senders=many, through_store=False)
    _corrupt_the_senders_table(db_path)
    with viewer(make_settings(tmp_path)) as client:
        first_page = client.get("/api/senders?limit=1")
        export = client.get("/api/export.csv")
    assert first_page.status_code == 200  # the damage is half-way down the table, past what a page reads
    assert export.status_code == 503
    assert export.json()["error"] == "db_unreadable"
    assert export.headers["content-type"] == "application/json"


# -- what is created and what is shown -----------------------------------------------------------------------------


def test_the_ingester_creates_the_database_and_its_sidecars_owner_only(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "a.mbox"
    mbox.write_bytes(mbox_bytes(20))
    old = os.umask(0o022)  # the usual umask, which used to give 0644
    try:
        result = run_cli("import", mbox, "--db", db_path, "--quiet")
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if p.name.startswith("stats.db")}
    assert modes["stats.db"] == 0o600
    assert modes["stats.db-wal"] == 0o600 and modes["stats.db-shm"] == 0o600
    with viewer(make_settings(tmp_path)) as client:  # and the viewer (same user) still reads it
        assert client.get("/api/senders").json()["total_messages"] == 20


def test_the_ingester_makes_an_older_world_readable_database_owner_only(tmp_path: Path, db_path: Path) -> None:
    mbox = tmp_path / "a.mbox"
    mbox.write_bytes(mbox_bytes(5))
    assert run_cli("import", mbox, "--db", db_path, "--quiet").returncode == 0
    files = [db_path, db_path.with_name("stats.db-wal"), db_path.with_name("stats.db-shm")]
    for path in files:
        path.chmod(0o644)  # as databases were made before files were owner-only
    mbox.write_bytes(mbox_bytes(8))
    result = run_cli("import", mbox, "--db", db_path, "--quiet")
    assert result.returncode == 0, result.stderr
    assert [stat.S_IMODE(path.stat().st_mode) for path in files] == [0o600, 0o600, 0o600]
