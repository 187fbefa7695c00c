"""docs/reference.md against the code: generated settings and flags, exit codes, error kinds, Docker variables,
API routes in docs/api.md, and a README that stays short and links only to pages that exist."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from fastapi.routing import APIRoute

from ingester import cli
from ingester.settings import IngesterSettings
from ingester.signals import ABORT_EXIT_CODE
from shared.errors import ErrorKind, GmailStatsError
from tests.conftest import REPO_ROOT
from viewer.api import router
from viewer.settings import ViewerSettings

DOCS = REPO_ROOT / "docs"
REFERENCE = DOCS / "reference.md"


def table_column(text: str, heading: str) -> list[str]:
    """The first column of the first table under `## heading`, without backticks."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [row.split("|")[1].strip().strip("`") for row in rows]


def test_generated_settings_and_flags_match_the_code() -> None:
    """`make docs` regenerates them; its `--check` changes nothing and says whether the file is up to date."""
    before = REFERENCE.read_bytes()
    check = subprocess.run(
        [sys.executable, "docs/reference.py", "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stderr
    assert REFERENCE.read_bytes() == before


def test_every_setting_has_a_description() -> None:
    for settings in (IngesterSettings, ViewerSettings):
        for name, field in settings.model_fields.items():
            assert field.description, f"{settings.__name__}.{name} has no description"


def test_exit_codes_are_the_codes_the_code_returns() -> None:
    def subclasses(cls: type[GmailStatsError]) -> list[type[GmailStatsError]]:
        return [cls, *(sub for child in cls.__subclasses__() for sub in subclasses(child))]

    used = {cli.EXIT_OK, cli.EXIT_FAILURE, cli.EXIT_USAGE, ABORT_EXIT_CODE}
    used |= {error.exit_code for error in subclasses(GmailStatsError)}
    documented = {int(code) for code in table_column(REFERENCE.read_text(), "Exit codes")}
    assert documented == used


def string_constants(node: ast.AST) -> set[str]:
    """The strings in `node`: literals, and `ErrorKind.NAME` members as their values."""
    found = {sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant) and isinstance(sub.value, str)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "ErrorKind":
            found.add(ErrorKind[sub.attr].value)
    return found


def _holds_pairs(target: ast.expr) -> bool:
    """`_STATUS_KINDS = {status: (kind, message)}` or `kind, message = …`."""
    if isinstance(target, ast.Tuple):
        first = target.elts[0]
        return isinstance(first, ast.Name) and first.id == "kind"
    return isinstance(target, ast.Name) and target.id == "_STATUS_KINDS"


def _first_of_pairs(node: ast.AST) -> set[str]:
    """The string first elements of every tuple in `node`: `("kind", "message")` pairs."""
    pairs = [sub for sub in ast.walk(node) if isinstance(sub, ast.Tuple) and sub.elts]
    return {kind for pair in pairs for kind in string_constants(pair.elts[0])}


def kinds_in(*packages: str) -> set[str]:
    """Every string a module passes as an error kind: `kind=`/`error_kind=` arguments, `kind = …` assignments,
    `ApiError(status, "kind", …)`, `error_body("kind", …)`, `(status, "kind", …)` tuples and `(kind, message)` pairs
    assigned to `kind, …` or to the viewer's `_STATUS_KINDS`."""
    found: set[str] = set()
    for package in packages:
        for module in (REPO_ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(module.read_text())):
                if isinstance(node, ast.keyword) and node.arg in ("kind", "error_kind"):
                    found |= string_constants(node.value)
                elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        if isinstance(target, ast.Name) and target.id == "kind":
                            found |= string_constants(node.value)
                        elif _holds_pairs(target):
                            found |= _first_of_pairs(node.value)
                elif isinstance(node, ast.Tuple) and len(node.elts) > 1:
                    status, kind = node.elts[:2]  # `(413, "too_large", message)`, `return 403, "bad_host", …`
                    if isinstance(status, ast.Constant) and isinstance(status.value, int) and 400 <= status.value < 600:
                        found |= string_constants(kind)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    if node.func.id == "ApiError" and len(node.args) > 1:
                        found |= string_constants(node.args[1])
                    elif node.func.id == "error_body" and node.args:
                        found |= string_constants(node.args[0])
    return found


def test_run_error_kinds_are_the_kinds_the_ingester_records() -> None:
    documented = set(table_column(REFERENCE.read_text(), "Run error kinds"))
    assert documented == kinds_in("shared", "ingester")


def test_http_error_kinds_are_the_kinds_the_viewer_answers() -> None:
    documented = set(table_column(REFERENCE.read_text(), "HTTP error kinds"))
    assert documented == kinds_in("viewer") - {"error"}


def test_docker_variables_are_the_ones_compose_reads_with_their_defaults() -> None:
    compose = (REPO_ROOT / "compose.yaml").read_text()
    used = dict(re.findall(r"\$\{(\w+):-([^}]*)\}", compose))
    example = dict(re.findall(r"^(\w+)=(.*)$", (REPO_ROOT / ".env.example").read_text(), re.MULTILINE))
    section = REFERENCE.read_text().split("\n## Docker stack variables\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    documented = {name.strip().strip("`"): default.strip().strip("`") for name, default in rows}
    assert documented == used
    assert set(example) == set(used)
    assert example == used


def test_every_api_route_is_in_the_api_page() -> None:
    api = (DOCS / "api.md").read_text()
    paths = {route.path for route in router.routes if isinstance(route, APIRoute)}
    assert paths
    assert sorted(path for path in paths if f" {path}" not in api) == []


def test_the_readme_fits_on_a_screen_and_links_only_to_pages_that_exist() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    assert "make install" in readme and "make test" in readme
    for page in ("scanning", "importing", "api", "security", "development", "benchmarks", "reference"):
        assert f"docs/{page}.md" in readme, page
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (REPO_ROOT / target).exists(), target


def test_docs_pages_link_only_to_pages_that_exist() -> None:
    for page in sorted(DOCS.glob("*.md")):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not target.startswith("mailto:"):
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_one_spelling_of_the_commands_in_the_docs() -> None:
    """After `make install` and `. .venv/bin/activate` the commands are `gmail-stats` and `gmail-stats-viewer`."""
    pages: list[Path] = [REPO_ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    spelled_out = re.compile(r"(?<![/\w])\.venv/bin/gmail-stats")  # a linked path like "$PWD/.venv/bin/…" is fine
    offenders = [page.name for page in pages if spelled_out.search(page.read_text())]
    assert offenders == []
