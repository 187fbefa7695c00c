"""The layout rules of STYLE.md, enforced: who may import whom, where settings and engines are built."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, tracked_files

PACKAGES = ("shared", "ingester", "viewer")
# The developer guide's fixed top level (docs/development.md, "Layout"): nothing else may appear beside these.
TOP_LEVEL = {
    *("compose.yaml", "Dockerfile", "Makefile", "README.md", "pyproject.toml"),
    *(".ci", "bench", "docker", "docs", "ingester", "shared", "tests", "viewer"),
    *(".dockerignore", ".env.example", ".gitignore"),
}


def _modules(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("shared", ("ingester", "viewer")), ("ingester", ("viewer",)), ("viewer", ("ingester",))],
)
def test_packages_import_only_shared(package: str, forbidden: tuple[str, ...]) -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)} imports {name}"
        for path in _modules(package)
        for name in _imports(path)
        if name.split(".")[0] in forbidden
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("library", "allowed"), [("googleapiclient", "ingester/gmail_google.py"), ("docker", "viewer/launch_docker.py")]
)
def test_one_module_per_foreign_service(library: str, allowed: str) -> None:
    users = {
        str(path.relative_to(REPO_ROOT))
        for package in PACKAGES
        for path in _modules(package)
        if any(name.split(".")[0] == library for name in _imports(path))
    }
    assert users <= {allowed}


_IMPORT_TIME_STATE = re.compile(r"^\w+\s*=\s*(\w+Settings\(|create_engine\(|writer_engine\(|reader_engine\()", re.M)


def test_no_import_time_settings_or_engines() -> None:
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for package in PACKAGES
        for path in _modules(package)
        if _IMPORT_TIME_STATE.search(path.read_text())
    ]
    assert offenders == []


def test_only_settings_read_the_environment() -> None:
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for package in PACKAGES
        for path in _modules(package)
        if re.search(r"os\.environ|os\.getenv", path.read_text()) and not path.name.startswith("launch_")
    ]
    assert offenders == []


def test_every_module_starts_with_a_docstring() -> None:
    missing = [
        str(path.relative_to(REPO_ROOT))
        for package in PACKAGES
        for path in _modules(package)
        if ast.get_docstring(ast.parse(path.read_text())) is None and path.read_text().strip()
    ]
    assert missing == []


def test_the_top_level_is_the_fixed_layout() -> None:
    found = {path.relative_to(REPO_ROOT).parts[0] for path in tracked_files()}
    assert sorted(found - TOP_LEVEL) == [], "docs/development.md lists the top level; put new files inside it"
