"""The typed contract: the served OpenAPI document, and a property-based fuzzer (schemathesis) against it.

The fuzzer sends what the page sends (the CSRF token, a same-origin `Origin` and `Sec-Fetch-Site`, JSON), so its
requests reach the routes; every answer must be a non-5xx that matches the document (status, media type, body).
Launches go to the fake ingester, which holds the lock, so later launches are 409s; the teardown stops it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.db import reader_engine
from shared.runs import list_runs
from tests.conftest import REPO_ROOT
from tests.support.viewer import make_settings, mbox_bytes, seed
from viewer.app import OPENAPI_URL, create_app

pytestmark = pytest.mark.slow

# schemathesis' ASGI client sends `Host: testserver`; the fuzzed viewer is configured to answer to that name.
FUZZ_HOST = "testserver"


def _fake_ingester(folder: Path) -> Path:
    script = folder / "fake-ingester"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{REPO_ROOT}" exec "{sys.executable}" -m tests.fakes.ingester slow "$@"\n'
    )
    script.chmod(0o755)
    return script


def _stop_fake_ingesters(db_path: Path) -> None:
    if not db_path.exists():
        return
    engine = reader_engine(db_path)
    try:
        with engine.connect() as conn:
            pids = [run.pid for run in list_runs(conn, limit=100) if run.is_open and run.pid]
    finally:
        engine.dispose()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One viewer for the module, started and stopped like a served one (its lifespan runs around the fuzzing)."""
    folder = tmp_path_factory.mktemp("fuzz")
    seed(folder / "stats.db")
    (folder / "imports").mkdir()
    (folder / "imports" / "a.mbox").write_bytes(mbox_bytes(3))
    config = make_settings(folder, allowed_hosts=FUZZ_HOST, ingest_bin=_fake_ingester(folder), cancel_grace_seconds=0.5)
    try:
        with TestClient(create_app(config), base_url=f"http://{FUZZ_HOST}") as client:
            yield client
    finally:
        for db in sorted(folder.glob("stats*.db")):  # every account the fuzzing launched into
            _stop_fake_ingesters(db)


@pytest.fixture(scope="module")
def page_headers(fuzz_client: TestClient) -> dict[str, str]:
    return {
        "X-Gmail-Stats-Csrf": fuzz_client.get("/api/status").json()["csrf_token"],
        "Origin": f"http://{FUZZ_HOST}",
        "Sec-Fetch-Site": "same-origin",
        "Content-Type": "application/json",
    }


def _lifespan_elsewhere(app: ASGIApp) -> ASGIApp:
    """The app for schemathesis' client, which starts and stops lifespans per test; the fixture's client owns it."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            await send({"type": f"{message['type']}.complete"})
            if message["type"] == "lifespan.shutdown":
                return

    return wrapped


@pytest.fixture(scope="module")
def api_schema(fuzz_client: TestClient) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi(OPENAPI_URL, _lifespan_elsewhere(fuzz_client.app))


OPERATIONS = [
    ("GET", "/api/summary"),
    ("GET", "/api/senders"),
    ("GET", "/api/domains"),
    ("GET", "/api/volume"),
    ("GET", "/api/export.csv"),
    ("GET", "/api/domains.csv"),
    ("GET", "/api/status"),
    ("GET", "/api/runs"),
    ("POST", "/api/runs"),
    ("GET", "/api/imports"),
    ("POST", "/api/runs/{run_id}/cancel"),
    ("POST", "/api/runs/{run_id}/consent"),
    ("GET", "/api/runs/{run_id}/log"),
    ("POST", "/api/hidden"),
    ("GET", "/api/estimates"),
    ("GET", "/api/estimates.csv"),
]
WITH_INPUTS = {
    "/api/senders",
    "/api/domains",
    "/api/volume",
    "/api/export.csv",
    "/api/domains.csv",
    "/api/runs",
    "/api/runs/{run_id}/cancel",
    "/api/runs/{run_id}/consent",
    "/api/runs/{run_id}/log",
    "/api/hidden",
    "/api/estimates",
    "/api/estimates.csv",
}
CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


# schemathesis' own pytest plugin (`from_fixture`) does not run under pytest 9, so each operation's strategy is
# driven by hypothesis directly: valid inputs, then inputs that break the document on purpose.
@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [(method, path, GenerationMode.POSITIVE) for method, path in OPERATIONS]
    # Only operations with parameters or a body have inputs to break.
    + [(method, path, GenerationMode.NEGATIVE) for method, path in OPERATIONS if path in WITH_INPUTS],
    ids=str,
)
def test_api_conforms_to_its_openapi_document(
    api_schema: schemathesis.BaseSchema, page_headers: dict[str, str], method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]
    statuses: Counter[int] = Counter()
    refused: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def fuzz(case: schemathesis.Case[Any]) -> None:
        response = case.call_and_validate(headers=page_headers, checks=CHECKS)
        statuses[response.status_code] += 1
        if response.status_code in (403, 415):
            refused.append(response.text)

    fuzz()
    assert refused == []  # every request got past the guard, as the page's own requests do
    assert sum(statuses.values()) >= 1


def test_openapi_document_is_served_with_the_error_shape(fuzz_client: TestClient) -> None:
    response = fuzz_client.get(OPENAPI_URL)
    foreign = fuzz_client.get(OPENAPI_URL, headers={"Host": "evil.example"})
    assert response.status_code == 200
    assert response.headers["content-security-policy"] == "default-src 'self'; frame-ancestors 'none'"
    assert foreign.status_code == 403  # the Host allow-list guards the document like every other route
    document = response.json()
    assert set(document["paths"]) == {
        "/api/summary",
        "/api/senders",
        "/api/domains",
        "/api/volume",
        "/api/export.csv",
        "/api/domains.csv",
        "/api/status",
        "/api/runs",
        "/api/imports",
        "/api/runs/{run_id}/cancel",
        "/api/runs/{run_id}/consent",
        "/api/runs/{run_id}/log",
        "/api/hidden",
        "/api/gmail/links",
        "/api/gmail/filters.xml",
        "/api/estimates",
        "/api/estimates.csv",
        "/api/accounts",
        "/api/account/settings",
    }
    errors = document["components"]["schemas"]["ErrorOut"]
    assert set(errors["required"]) == {"error", "message"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert "HTTPValidationError" not in str(operation), (method, path)  # FastAPI's shape is not ours
            assert operation["responses"]["4XX"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorOut"
            }


def test_routes_read_the_app_state_through_one_typed_accessor() -> None:
    for name in ("web/api.py", "web/deps.py", "app.py"):
        source = (REPO_ROOT / "viewer" / name).read_text()
        assert "type: ignore" not in source, name
    assert "app.state" not in (REPO_ROOT / "viewer" / "web" / "api.py").read_text()
