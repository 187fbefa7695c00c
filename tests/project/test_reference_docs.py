"""docs/reference.md against the code: generated settings and flags, exit codes, error kinds, Docker variables,
API routes in docs/api.md, and a README that stays short and links only to pages that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fastapi.routing import APIRoute

from ingester import cli
from ingester.runs.signals import ABORT_EXIT_CODE
from ingester.settings import IngesterSettings
from shared.errors import HTTP_ERROR_KINDS, INGESTER_ERROR_KINDS, ErrorKind, GmailStatsError
from tests.conftest import REPO_ROOT
from viewer.settings import ViewerSettings
from viewer.web import api as data_api
from viewer.web import gmail_api, run_api

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


def test_run_error_kinds_are_the_kinds_the_ingester_reports() -> None:
    documented = set(table_column(REFERENCE.read_text(), "Run error kinds"))
    assert documented == {str(kind) for kind in INGESTER_ERROR_KINDS}


def test_http_error_kinds_are_the_kinds_the_viewer_answers() -> None:
    documented = set(table_column(REFERENCE.read_text(), "HTTP error kinds"))
    assert documented == {str(kind) for kind in HTTP_ERROR_KINDS}


def test_every_error_kind_is_the_ingesters_or_the_viewers() -> None:
    assert set(ErrorKind) == INGESTER_ERROR_KINDS | HTTP_ERROR_KINDS


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
    routes = [*data_api.router.routes, *run_api.router.routes, *gmail_api.router.routes]
    paths = {route.path for route in routes if isinstance(route, APIRoute)}
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
