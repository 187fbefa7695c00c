"""The viewer never imports the ingester, and only its Docker launcher imports the Docker SDK.

The settings and API routes are checked against docs/ in test_reference_docs.py."""

from __future__ import annotations

import ast

from tests.conftest import REPO_ROOT


def test_viewer_imports_only_shared_and_docker_only_in_its_launcher() -> None:
    for module in sorted((REPO_ROOT / "viewer").rglob("*.py")):
        tree = ast.parse(module.read_text())
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        roots = {name.split(".")[0] for name in names}
        assert "ingester" not in roots, module
        if module.name != "launch_docker.py":
            assert "docker" not in roots, module
