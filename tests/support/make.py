"""The real Makefile in a scratch checkout where `docker compose run` is a recorder: what a printed `make` command
would start, without Docker."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT

RECORDER = """#!/bin/sh
# Stands in for `docker compose run`: records its arguments, NUL-separated.
for arg in "$@"; do printf '%s\\0' "$arg"; done > argv
"""


def scratch_checkout(tmp_path: Path) -> Path:
    """A checkout with the real Makefile whose compose-run.sh records instead of starting a container, and a
    `docker` on PATH that does nothing (`make secrets` calls it)."""
    root = tmp_path / "checkout"
    (root / "docker").mkdir(parents=True)
    (root / "bin").mkdir()
    shutil.copy(REPO_ROOT / "Makefile", root / "Makefile")
    (root / "docker" / "compose-run.sh").write_text(RECORDER)
    (root / "bin" / "docker").write_text("#!/bin/sh\nexit 0\n")
    (root / "bin" / "docker").chmod(0o755)
    return root


def paste(root: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Runs `command` as a person pastes it into a POSIX shell in the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "MBOX", "RESUME"))}
    env["PATH"] = f"{root / 'bin'}:{env['PATH']}"
    return subprocess.run(["sh", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=60)


def recorded(root: Path) -> list[str]:
    return (root / "argv").read_bytes().decode().split("\0")[:-1]
