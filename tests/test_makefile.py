"""The Docker `make` verbs speak host words: a missing mbox is named by its host path, and RESUME= resumes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO_ROOT, capture_output=True, text=True)


def test_make_import_names_a_missing_file_by_its_host_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.mbox"
    result = make("import", f"MBOX={missing}")
    assert result.returncode != 0
    assert f"make import: {missing}: no such file" in result.stderr
    assert "/mbox/" not in result.stderr


def test_make_import_without_a_file_prints_its_usage() -> None:
    result = make("import")
    assert "usage: make import MBOX=/path/to/file.mbox [RESUME=RUN_ID]" in result.stderr


def test_resume_passes_the_run_id_to_the_containerised_ingester(tmp_path: Path) -> None:
    mbox = tmp_path / "mail.mbox"
    mbox.write_bytes(b"")
    scan = make("-n", "scan", "RESUME=4").stdout
    assert scan.strip().endswith("ingester scan --resume 4")
    assert "--resume" not in make("-n", "scan").stdout
    imported = make("-n", "import", f"MBOX={mbox}", "RESUME=3").stdout
    assert imported.strip().endswith('ingester import "/mbox/$(basename -- "' + str(mbox) + '")" --resume 3')
