"""The README documents every viewer setting and every API route; the viewer never imports the ingester."""

from __future__ import annotations

import ast

from fastapi.routing import APIRoute

from tests.conftest import REPO_ROOT
from viewer.api import router
from viewer.settings import ViewerSettings


def test_every_viewer_setting_is_in_the_readme() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for name, field in ViewerSettings.model_fields.items():
        assert field.description, name
        assert f"`GMAIL_STATS_{name.upper()}`" in readme, name


def test_every_api_route_is_in_the_readme() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    paths = {route.path for route in router.routes if isinstance(route, APIRoute)}
    assert paths
    for path in paths:
        assert f" {path}" in readme, path


def test_viewer_imports_only_shared_and_docker_only_in_its_launcher() -> None:
    for module in sorted((REPO_ROOT / "viewer").rglob("*.py")):
        tree = ast.parse(module.read_text())
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        roots = {name.split(".")[0] for name in names}
        assert "ingester" not in roots, module
        if module.name != "launch_docker.py":
            assert "docker" not in roots, module
