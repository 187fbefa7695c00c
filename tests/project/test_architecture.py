"""The layout rules of docs/development.md, enforced: who may import whom, where settings and engines are built."""

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
    ("library", "allowed"),
    [("googleapiclient", "ingester/gmail/gmail_google.py"), ("docker", "viewer/launch/launch_docker.py")],
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path: Path) -> set[str]:
    """Imports run when the module loads (not those inside functions, which break no circle at import time)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


# The rooms (docs/development.md, Architecture): who may import whom inside each package.
WALLS = [
    ("viewer.query", ("fastapi", "starlette", "viewer.web", "viewer.launch", "viewer.app")),
    ("viewer.launch", ("fastapi", "starlette", "viewer.web", "viewer.app")),
    ("viewer.errors", ("fastapi", "starlette", "viewer.web")),
    ("ingester.runs", ("ingester.mbox", "ingester.gmail", "ingester.cli")),
    ("ingester.store", ("ingester.gmail", "ingester.runs", "ingester.cli")),
    ("ingester.records", ("ingester.mbox", "ingester.gmail", "ingester.store", "ingester.runs")),
    ("ingester.mbox", ("ingester.gmail",)),
    ("ingester.gmail", ("ingester.mbox",)),
]


@pytest.mark.parametrize(("room", "forbidden"), WALLS, ids=[room for room, _ in WALLS])
def test_each_room_imports_only_what_its_wall_allows(room: str, forbidden: tuple[str, ...]) -> None:
    package = room.split(".")[0]
    offenders = [
        f"{_module_name(path)} imports {name}"
        for path in _modules(package)
        if _module_name(path) == room or _module_name(path).startswith(f"{room}.")
        for name in _imports(path)
        if any(name == wall or name.startswith(f"{wall}.") for wall in forbidden)
    ]
    assert offenders == []


def test_no_import_circles() -> None:
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in _modules(package):
            graph[_module_name(path)] = set()
    for package in PACKAGES:
        for path in _modules(package):
            graph[_module_name(path)] = {name for name in _top_level_imports(path) if name in graph} - {
                _module_name(path)
            }
    # A package's __init__ is imported on the way to its modules: that edge is no circle of ours.
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_rooms_stay_small() -> None:
    """About 300 lines a module and 15 modules a folder (docs/development.md): split past that. The tests' rooms
    keep the same folder size; a test module may run longer (a scenario reads best whole)."""
    folders: dict[Path, int] = {}
    long_modules = []
    for package in (*PACKAGES, "tests"):
        for path in _modules(package):
            folders[path.parent] = folders.get(path.parent, 0) + (path.name != "__init__.py")
            if package != "tests" and len(path.read_text().splitlines()) > 350:
                long_modules.append(str(path.relative_to(REPO_ROOT)))
    crowded = sorted(str(folder.relative_to(REPO_ROOT)) for folder, count in folders.items() if count > 15)
    assert (long_modules, crowded) == ([], [])
