"""The Docker `make` verbs speak host words (a missing mbox is named by its host path, RESUME= resumes), and
`make secrets` gives the containers' user the secrets folder without sudo."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.dockerenv import INGESTER_UID, compose_env, ensure_image


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


@pytest.mark.docker
def test_make_secrets_hands_the_folder_to_the_containers_user_without_sudo(tmp_path: Path) -> None:
    ensure_image()
    for name in ("Makefile", "compose.yaml"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    (tmp_path / "secrets").mkdir(mode=0o755)
    project = f"gmstest-secrets-{os.getpid()}"
    env = compose_env(COMPOSE_PROJECT_NAME=project, GMAIL_STATS_VOLUME=f"{project}-data")
    try:
        made = subprocess.run(["make", "secrets"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr
        folder = (tmp_path / "secrets").stat()
        assert (folder.st_uid, folder.st_gid) == (INGESTER_UID, os.getgid())
        assert stat.S_IMODE(folder.st_mode) == 0o2770
        wrote = subprocess.run(
            [
                "docker",
                "compose",
                "run",
                "--rm",
                "--no-deps",
                "--entrypoint",
                "sh",
                "ingester",
                "-c",
                "echo x > /secrets/t",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert wrote.returncode == 0, wrote.stderr
        assert (tmp_path / "secrets" / "t").stat().st_uid == INGESTER_UID
    finally:
        subprocess.run(
            ["docker", "compose", "down", "--volumes"], cwd=tmp_path, env=env, capture_output=True, timeout=300
        )
