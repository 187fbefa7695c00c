"""Host guard, CSRF matrix, headers on every kind of response, CORS, and the error shape on every error path."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.launch_request import LaunchRequest
from tests.support.viewer import csrf_headers, make_settings, seed, viewer
from viewer.app import STATIC_DIR
from viewer.launch.launcher import Launched
from viewer.web.security import SecurityGuard

SECURITY = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def _assert_security_headers(headers: Mapping[str, str]) -> None:
    for name, value in SECURITY.items():
        assert headers[name] == value, name
    assert not [k for k in headers if k.lower().startswith("access-control-")]


@pytest.mark.parametrize(
    "host", ["evil.example", "0.0.0.0", "0.0.0.0:7878", "", "127.0.0.1.evil.example", "[::2]:7878"]
)
def test_foreign_host_is_refused(tmp_path: Path, host: str) -> None:
    with viewer(make_settings(tmp_path)) as client:
        for url in ("/api/status", "/", "/static/app.js", "/nope"):
            response = client.get(url, headers={"Host": host})
            assert response.status_code == 403
            assert response.json() == {
                "error": "bad_host",
                "message": "this viewer answers only to its own address (check GMAIL_STATS_ALLOWED_HOSTS)",
            }
            _assert_security_headers(response.headers)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:9999", "LOCALHOST", "[::1]", "[::1]:7878", "Stats.Example"])
def test_loopback_and_configured_hosts_are_served(tmp_path: Path, host: str) -> None:
    with viewer(make_settings(tmp_path, allowed_hosts="stats.example")) as client:
        assert client.get("/api/status", headers={"Host": host}).status_code == 200


class _BrokenLauncher:
    """A launcher whose launch fails in a way nobody planned for: the way to a real 500 inside a route."""

    def launch(self, request: LaunchRequest) -> Launched:
        raise RuntimeError("unexpected")

    def is_alive(self, launched: Launched) -> bool:
        return False

    def cancel(self, launched: Launched, *, grace_seconds: float = 0) -> None:
        return None

    def log_tail(self, launched: Launched, *, lines: int = 0) -> list[str]:
        return []

    def adopt(self) -> list[Launched]:
        return []

    def reap(self) -> None:
        return None

    def consent_listener(self, launched: Launched | None, *, redirect_port: int) -> tuple[str, int]:
        return "127.0.0.1", redirect_port

    def close(self) -> None:
        return None


def test_headers_on_pages_static_files_and_errors(tmp_path: Path, db_path: Path) -> None:
    seed(db_path)
    settings = make_settings(tmp_path)
    with viewer(settings, launcher=_BrokenLauncher(), raise_server_exceptions=False) as client:
        token_headers = csrf_headers(client)
        # A run row the viewer cannot parse: bad database contents, a 503 with the error shape.
        engine = writer_engine(db_path)
        with engine.begin() as conn:
            conn.execute(text("UPDATE ingest_runs SET warnings_tail = 'not json'"))
        close_writer_keeping_sidecars(engine, db_path)
        responses = {
            "index": client.get("/"),
            "static": client.get("/static/app.css"),
            "api": client.get("/api/status"),
            "404": client.get("/api/nothing"),
            "static404": client.get("/static/nothing.js"),
            "405": client.delete("/api/status", headers=token_headers),
            "413": client.post("/api/runs", content=b"{" + b" " * 20_000 + b"}", headers=token_headers),
            "503": client.get("/api/runs"),
            "500": client.post("/api/runs", json={"source": "gmail_api"}, headers=token_headers),
        }
    assert {name: r.status_code for name, r in responses.items()} == {
        "index": 200,
        "static": 200,
        "api": 503,  # the status also reads the broken run row
        "404": 404,
        "static404": 404,
        "405": 405,
        "413": 413,
        "503": 503,
        "500": 500,
    }
    for response in responses.values():
        _assert_security_headers(response.headers)
    assert responses["404"].json() == {"error": "not_found", "message": "no such page or API route"}
    assert responses["405"].json() == {
        "error": "method_not_allowed",
        "message": "this route does not accept that method",
    }
    assert responses["503"].json()["error"] == "db_unreadable"
    assert responses["500"].json() == {
        "error": "internal",
        "message": "the viewer hit an unexpected error; see its log",
    }


def test_preflight_gets_no_cors_headers(tmp_path: Path) -> None:
    with viewer(make_settings(tmp_path)) as client:
        response = client.options(
            "/api/runs",
            headers={
                "Origin": "http://evil.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-gmail-stats-csrf, content-type",
            },
        )
    assert response.status_code == 405
    _assert_security_headers(response.headers)


def _post(
    client: TestClient, headers: dict[str, str], content: bytes = b'{"source": "nope"}'
) -> httpx2.Response:  # what starlette's TestClient answers with
    return client.post("/api/runs", content=content, headers=headers)


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", b"source=mbox"),
        ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=source\r\n\r\nmbox\r\n--x--"),
        ("text/plain", b'{"source": "mbox"}'),
        (None, b'{"source": "mbox"}'),
        ("application/jsonx", b'{"source": "mbox"}'),
    ],
)
def test_mutations_need_a_json_content_type_first(tmp_path: Path, content_type: str | None, body: bytes) -> None:
    with viewer(make_settings(tmp_path)) as client:
        headers = csrf_headers(client)
        del headers["Content-Type"]
        if content_type is not None:
            headers["Content-Type"] = content_type
        response = client.post("/api/runs", content=body, headers=headers)
        no_token = client.post("/api/runs/1/cancel", content=body, headers={"Content-Type": content_type or ""})
    assert response.status_code == 415
    assert response.json() == {"error": "bad_content_type", "message": "send the request body as application/json"}
    assert no_token.status_code == 415  # the content type is checked before the token
    _assert_security_headers(response.headers)


@pytest.mark.parametrize("token", [None, "", "0" * 64, "wrong"])
def test_mutations_need_the_csrf_token(tmp_path: Path, token: str | None) -> None:
    with viewer(make_settings(tmp_path)) as client:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["X-Gmail-Stats-Csrf"] = token
        responses = [_post(client, headers), client.post("/api/runs/1/cancel", json={}, headers=headers)]
    for response in responses:
        assert response.status_code == 403
        assert response.json() == {
            "error": "csrf",
            "message": "missing or wrong X-Gmail-Stats-Csrf header; reload the page",
        }


def test_token_differs_per_viewer_process(tmp_path: Path) -> None:
    with viewer(make_settings(tmp_path)) as first, viewer(make_settings(tmp_path)) as second:
        stale = csrf_headers(first)
        assert _post(second, stale).status_code == 403


@pytest.mark.parametrize(
    ("origin", "fetch_site", "status"),
    [
        ("http://evil.example", None, 403),
        ("null", None, 403),
        ("https://127.0.0.1:7878", None, 403),
        ("http://127.0.0.1:7879", None, 403),
        ("http://localhost:7878", None, 403),  # allowed name, but not the origin this page was served from
        ("http://127.0.0.1:7878", "cross-site", 403),
        ("http://127.0.0.1:7878", "same-site", 403),
        (None, "cross-site", 403),
        ("http://127.0.0.1:7878", "same-origin", 422),
        ("http://127.0.0.1:7878", None, 422),
        (None, "none", 422),
        (None, None, 422),
    ],
)
def test_origin_and_fetch_metadata(tmp_path: Path, origin: str | None, fetch_site: str | None, status: int) -> None:
    with viewer(make_settings(tmp_path)) as client:
        headers = csrf_headers(client)
        if origin is not None:
            headers["Origin"] = origin
        if fetch_site is not None:
            headers["Sec-Fetch-Site"] = fetch_site
        response = _post(client, headers)
    assert response.status_code == status
    expected = "csrf" if status == 403 else "bad_source"  # 422: it got past the guard to the route
    assert response.json()["error"] == expected


def test_get_never_changes_state(tmp_path: Path) -> None:
    with viewer(make_settings(tmp_path)) as client:
        assert client.get("/api/runs/1/cancel").status_code == 405


def test_index_has_no_inline_script_style_or_handlers() -> None:
    html = (STATIC_DIR / "index.html").read_text()
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None
    assert "<style" not in html
    assert re.search(r"\sstyle\s*=", html) is None
    assert re.search(r"\son[a-z]+\s*=", html, flags=re.IGNORECASE) is None
    assert "http://" not in html and "https://" not in html.replace('href="https://takeout.google.com', "")


def test_websocket_handshakes_are_refused(tmp_path: Path) -> None:
    with (
        viewer(make_settings(tmp_path)) as client,
        pytest.raises(WebSocketDisconnect),
        client.websocket_connect("/api/status") as ws,
    ):
        ws.receive_text()


async def _raises(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError("before any answer")


async def _silent(scope: Scope, receive: Receive, send: Send) -> None:
    return None


@pytest.mark.parametrize("inner", [_raises, _silent], ids=["raises", "never-answers"])
def test_the_guard_answers_for_an_app_that_did_not(inner: ASGIApp) -> None:
    guarded = SecurityGuard(inner, csrf_token="t")
    client = TestClient(guarded, base_url="http://127.0.0.1:7878", raise_server_exceptions=False)  # no lifespan
    response = client.get("/anything")
    assert response.status_code == 500
    assert response.json() == {"error": "internal", "message": "the viewer hit an unexpected error; see its log"}
    _assert_security_headers(response.headers)


def test_no_telemetry_whatever_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """FastAPI sets up OpenTelemetry export when the environment asks (`FASTAPI_OTEL_AUTO_CONFIGURE`); the viewer
    never does: in that environment a plain FastAPI app tries (and says so), the viewer serves without trying."""
    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    with TestClient(FastAPI()):
        pass
    assert any("telemetry" in record.getMessage().lower() for record in caplog.records)
    caplog.clear()
    with viewer(make_settings(tmp_path)) as client:
        assert client.get("/api/status").status_code == 200
    assert not [record.getMessage() for record in caplog.records if "telemetry" in record.getMessage().lower()]
