"""The OAuth consent wait: a loopback listener that completes only on a request carrying our `state`.

The stock `run_local_server` answers exactly one request, so a favicon fetch or a port probe would end the flow;
this listener serves every request and ignores those without the right `state`. It polls so a signal stops it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

from ingester.gmail.gmail import AuthCancelled
from shared.errors import ErrorKind, GmailAuthError

_POLL_SECONDS = 0.2
_DONE_PAGE = b"<!doctype html><title>gmail-stats</title><p>gmail-stats has your answer. You can close this tab.</p>"
_IGNORED_PAGE = b"<!doctype html><title>gmail-stats</title><p>Waiting for Google's consent redirect.</p>"


@dataclass(frozen=True, slots=True)
class Callback:
    """What Google's redirect carried: a `code`, or an `error` such as `access_denied` or `policy_enforced`."""

    code: str | None
    error: str | None


def parse_callback(path: str, *, state: str) -> Callback | None:
    """The callback in a request path, or None when it does not carry our `state` (stray or forged)."""
    query = parse_qs(urlsplit(path).query)
    if query.get("state", [""])[0] != state:
        return None
    code = query.get("code", [""])[0] or None
    error = query.get("error", [""])[0] or None
    if code is None and error is None:
        return None
    return Callback(code=code, error=error)


class _Server(HTTPServer):
    allow_reuse_address = True
    timeout = _POLL_SECONDS

    def __init__(self, address: tuple[str, int], *, state: str) -> None:
        self.state = state
        self.callback: Callback | None = None
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 1  # a silent connection (a port probe) must not hold the loop past the 2 s cancel promise

    def do_GET(self) -> None:
        callback = parse_callback(self.path, state=self.server.state)
        if callback is not None and self.server.callback is None:
            self.server.callback = callback
        body = _DONE_PAGE if callback is not None else _IGNORED_PAGE
        self.send_response(200 if callback is not None else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the consent URL is the only thing we print
        pass


def wait_for_callback(*, bind: str, port: int, state: str, timeout: float, cancel: threading.Event) -> Callback:
    """Serves the loopback redirect until a request with our `state` arrives; raises on timeout or cancel."""
    try:
        server = _Server((bind, port), state=state)
    except OSError as exc:
        raise GmailAuthError(
            f"cannot listen for Google's consent redirect on {bind}:{port} ({exc.strerror}); "
            "free that port or set GMAIL_STATS_OAUTH_PORT",
            kind=ErrorKind.AUTH_REQUIRED,
        ) from exc
    deadline = time.monotonic() + timeout
    try:
        while server.callback is None:
            if cancel.is_set():
                raise AuthCancelled()
            if time.monotonic() >= deadline:
                raise GmailAuthError(
                    f"no answer from Google's consent page within {timeout:g} s; run the scan again and open the "
                    "printed link in a browser on this machine",
                    kind=ErrorKind.AUTH_REQUIRED,
                )
            server.handle_request()
        return server.callback
    finally:
        server.server_close()
