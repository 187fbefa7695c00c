"""An import path confined to the import folder: one that leaves it or follows a link on the way is refused, and
the import reads the file it checked through the descriptor it opened (`O_NOFOLLOW`), so a name swapped for a link
between the check and the use changes nothing (the check-then-use race). The run request itself:
test_run_request.py."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest

from ingester.runs.run_request import confine, open_confined, pinned_path
from shared.errors import InputFileError
from tests.conftest import run_cli
from tests.support.factories import generate_messages, write_mbox
from tests.support.importing import counts_of, import_file, query


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
