"""The Docker `make` verbs speak host words (a missing mbox is named by its host path, RESUME= resumes), and
`make secrets` gives the containers' user the secrets folder without sudo."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from shared.resume import CommandStyle, import_command, resume_command
from shared.schema.models import Source
from tests.conftest import REPO_ROOT
from tests.docker.dockerenv import INGESTER_UID, compose_env, ensure_image
from tests.support.make import paste, recorded, scratch_checkout


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


# File names a stranger's Takeout or a shared folder may hold: make functions, shell quotes and substitutions, a
# newline, a make comment sign, a backslash, an option-looking name.
HOSTILE_NAMES = [
    "x$(shell touch PWNED).mbox",
    '";touch PWNED;".mbox',
    "';touch PWNED;'.mbox",
    "$(touch PWNED).mbox",
    "`touch PWNED`.mbox",
    "$$(shell touch PWNED)$${IFS}.mbox",
    "a b\nc;touch PWNED.mbox",
    "#not a comment.mbox",
    "back\\slash\\.mbox",
    "-n.mbox",
]


def _pwned(tmp_path: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.name.startswith("PWNED")]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_printed_make_commands_keep_a_hostile_file_name_data(tmp_path: Path, name: str) -> None:
    root = scratch_checkout(tmp_path)
    folder = tmp_path / "take out"
    folder.mkdir()
    (folder / name).write_bytes(b"")
    path = str(folder / name)
    for command in (
        import_command(path=path, style=CommandStyle.MAKE),
        resume_command(source=Source.MBOX, run_id=3, style=CommandStyle.MAKE, mbox_path=path),
    ):
        dry = paste(root, command.replace("make ", "make -n ", 1))
        assert dry.returncode == 0, dry.stderr
        assert not (root / "argv").exists() and _pwned(tmp_path) == [], dry.stdout
        real = paste(root, command)
        assert real.returncode == 0, real.stderr
        assert _pwned(tmp_path) == []
        resume = ["--resume", "3"] if "RESUME=" in command else []
        assert recorded(root) == [
            "--volume",
            f"{folder}:/mbox:ro",
            "--env",
            f"GMAIL_STATS_HOST_MBOX={path}",
            "ingester",
            "import",
            f"/mbox/{name}",
            *resume,
        ]
        (root / "argv").unlink()


def test_resume_passes_the_run_id_to_the_containerised_ingester(tmp_path: Path) -> None:
    root = scratch_checkout(tmp_path)
    assert paste(root, "make scan RESUME=4").returncode == 0
    assert recorded(root) == ["--service-ports", "ingester", "scan", "--resume", "4"]
    assert paste(root, "make scan").returncode == 0
    assert recorded(root) == ["--service-ports", "ingester", "scan"]
    hostile = paste(root, "make -n scan RESUME='4$(shell touch PWNED)'; make scan RESUME='4$(shell touch PWNED)'")
    assert hostile.returncode == 0, hostile.stderr
    assert _pwned(tmp_path) == []
    assert recorded(root) == ["--service-ports", "ingester", "scan", "--resume", "4$(shell touch PWNED)"]


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
