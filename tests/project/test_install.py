"""`make install` as a newcomer meets it: a fresh checkout, the distribution's own python3, no uv; plus the rule
that no tracked file names a package-registry host (the locks pin names and hashes only)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO_ROOT, tracked_files
from tests.support.factories import generate_messages, write_mbox

# Assembled from parts so this file does not name the hosts it looks for.
REGISTRY_HOSTS = tuple(
    ".".join(parts)
    for parts in (
        ("pypi", "org"),
        ("pythonhosted", "org"),
        ("deb", "debian", "org"),
        ("security", "debian", "org"),
        ("ftp", "debian", "org"),
        ("archive", "ubuntu", "com"),
        ("registry", "npmjs", "org"),
        ("registry", "yarnpkg", "com"),
        ("registry-1", "docker", "io"),
        ("index", "docker", "io"),
        ("hub", "docker", "com"),
        ("ghcr", "io"),
        ("crates", "io"),
        ("proxy", "golang", "org"),
    )
)
DISTRIBUTION_PYTHON = Path("/usr/bin/python3")
LOCKS = REPO_ROOT / ".ci" / "requirements"


def test_no_tracked_file_names_a_package_registry_host() -> None:
    offenders = []
    for path in tracked_files():
        text = path.read_bytes().decode("utf-8", errors="replace").lower()
        offenders += [f"{path.relative_to(REPO_ROOT)}: {host}" for host in REGISTRY_HOSTS if host in text]
    assert offenders == []


def test_the_locks_pin_every_package_by_hash_and_name_no_url() -> None:
    for name in ("runtime", "build", "dev"):
        text = (LOCKS / f"{name}.txt").read_text()
        pins = [line for line in text.splitlines() if line and not line[0].isspace() and not line.startswith("#")]
        assert pins, name
        assert all("==" in pin for pin in pins), name
        assert text.count("--hash=sha256:") >= len(pins), name
        assert "://" not in text, name


def pins(name: str) -> dict[str, Version]:
    text = (LOCKS / f"{name}.txt").read_text()
    found = re.findall(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)", text, re.MULTILINE)
    return {canonicalize_name(package): Version(version) for package, version in found}


@pytest.mark.parametrize(("lock", "groups"), [("runtime", []), ("build", ["build"]), ("dev", ["build", "dev"])])
def test_the_locks_pin_what_pyproject_asks_for(lock: str, groups: list[str]) -> None:
    """Catches a dependency added to pyproject.toml without `make lock`."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    wanted = [] if lock == "build" else list(project["project"]["dependencies"])
    wanted += [spec for group in groups for spec in project["dependency-groups"][group]]
    pinned = pins(lock)
    for spec in map(Requirement, wanted):
        name = canonicalize_name(spec.name)
        assert name in pinned, f"{spec.name} is not in .ci/requirements/{lock}.txt: run `make lock`"
        assert spec.specifier.contains(pinned[name], prereleases=True), f"{spec} vs {pinned[name]}: run `make lock`"


def test_dev_pins_agree_with_the_runtime_and_build_pins() -> None:
    dev = pins("dev")
    for lock in ("runtime", "build"):
        assert {name: dev.get(name) for name in pins(lock)} == pins(lock), lock


def run_install(python: str | Path, venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", ".ci/install.sh", str(python), str(venv), ".ci/requirements/runtime.txt"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_install_refuses_a_python_older_than_3_11_by_name(tmp_path: Path) -> None:
    old = tmp_path / "python3.10"
    # Answers like a 3.10 interpreter: the version check fails and the version query prints 3.10.12.
    old.write_text('#!/bin/sh\ncase "$*" in *version_info*) exit 1 ;; *python_version*) echo 3.10.12 ;; esac\n')
    old.chmod(0o755)
    result = run_install(old, tmp_path / "venv")
    assert result.returncode == 1
    assert f"needs Python 3.11 or newer, but {old} is 3.10.12" in result.stderr
    assert "PYTHON=" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_install_names_the_debian_package_when_venv_cannot_bootstrap_pip(tmp_path: Path) -> None:
    # What Debian's python3 looks like without python3-venv: the ensurepip module is not there.
    shadow = tmp_path / "shadow" / "ensurepip"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('ensurepip is not installed (python3-venv)')\n")
    result = run_install(sys.executable, tmp_path / "venv", PYTHONPATH=str(shadow.parent))
    assert result.returncode == 1
    assert "sudo apt install python3-venv" in result.stderr
    assert not (tmp_path / "venv").exists()


def externally_managed(python: Path) -> bool:
    probe = "import sysconfig, os; print(os.path.exists(sysconfig.get_path('stdlib') + '/EXTERNALLY-MANAGED'))"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30).stdout.strip() == "True"


@pytest.mark.slow
def test_fresh_clone_installs_with_the_distribution_python_and_imports(tmp_path: Path) -> None:
    """The newcomer path: `make install` with Debian's python3 (PEP 668, no uv on PATH), then an import."""
    if not DISTRIBUTION_PYTHON.exists() or not externally_managed(DISTRIBUTION_PYTHON):
        reason = f"{DISTRIBUTION_PYTHON} is missing or not an externally managed distribution Python"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)
    clone = tmp_path / "clone"
    for path in tracked_files():
        target = clone / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    # Only the distribution's directories on PATH: no uv, no pyenv, no developer venv.
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8"}
    assert shutil.which("uv", path=env["PATH"]) is None, "uv is on the distribution PATH; the test needs it absent"
    install = subprocess.run(["make", "install"], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    assert ". .venv/bin/activate" in install.stdout
    assert not (clone / ".venv" / "bin" / "pytest").exists(), "make install must not install the developer tools"

    mbox = tmp_path / "mail.mbox"
    expected = write_mbox(mbox, generate_messages(count=60, body_bytes=300, senders=7))
    gmail_stats = clone / ".venv" / "bin" / "gmail-stats"
    db = tmp_path / "stats.db"
    imported = subprocess.run(
        [gmail_stats, "import", mbox, "--db", db, "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr
    exported = subprocess.run(
        [gmail_stats, "export", "--db", db], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    document = json.loads(exported.stdout)
    assert {row["sender"]: row["mails_sent"] for row in document["senders"]} == expected
    # Nothing went into the system interpreter.
    leaked = subprocess.run([DISTRIBUTION_PYTHON, "-c", "import ingester"], cwd="/", env=env, capture_output=True)
    assert leaked.returncode != 0
