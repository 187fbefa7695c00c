"""Helpers the launch tests through the API share: the fake ingester as an executable, files in the import folder,
starting a run and reading it back, and the PID its row records."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from shared.db import reader_engine
from shared.runs import get_run
from tests.conftest import REPO_ROOT
from tests.support.viewer import csrf_headers


def fake_bin(tmp_path: Path, mode: str) -> Path:
    """An executable that runs the fake ingester with `mode` before the viewer's fixed argv."""
    script = tmp_path / f"fake-ingester-{mode}"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{REPO_ROOT}" exec "{sys.executable}" -m tests.fakes.ingester {mode} "$@"\n'
    )
    script.chmod(0o755)
    return script


def write_imports(tmp_path: Path, files: dict[str, bytes]) -> None:
    """Each file (a path relative to the import folder, and its bytes) written under `tmp_path/imports`."""
    for name, data in files.items():
        target = tmp_path / "imports" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def start(client: TestClient, body: dict[str, Any]) -> Any:
    """`POST /api/runs` with the page's CSRF header; the response."""
    return client.post("/api/runs", json=body, headers=csrf_headers(client))


def run_row(client: TestClient, run_id: int) -> dict[str, Any]:
    """The run as `GET /api/runs` lists it."""
    response = client.get("/api/runs")
    assert response.status_code == 200, response.text
    runs = response.json()["runs"]
    return next(run for run in runs if run["run_id"] == run_id)


def finished(client: TestClient, run_id: int) -> dict[str, Any] | None:
    """The run once it has ended (for `wait_for`), else None."""
    run = run_row(client, run_id)
    return run if run["state"] not in ("running", "awaiting_auth") else None


def pid_of(db_path: Path, run_id: int) -> int:
    """The ingester's PID as its run row records it."""
    engine = reader_engine(db_path)
    try:
        with engine.connect() as conn:
            run = get_run(conn, run_id)
    finally:
        engine.dispose()
    assert run is not None and run.pid is not None
    return run.pid


def pid_gone(pid: int) -> bool:
    """Whether no process has this PID any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
