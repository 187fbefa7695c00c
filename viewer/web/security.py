"""The guard around the finished ASGI app: Host allow-list, body-size cap, CSRF rules for mutating requests, and
the security headers.

It wraps the whole app (not `add_middleware`), so its headers reach 404s, 405s and unhandled 500s too.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import ErrorKind
from viewer.errors import INTERNAL_MESSAGE, error_body

CSRF_HEADER = "x-gmail-stats-csrf"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)
_STRIPPED = frozenset(name for name, _ in SECURITY_HEADERS)
# The largest body the API takes: a launch request is well under 1 KiB (a path is at most 4096 characters).
MAX_BODY_BYTES = 16 * 1024
# Except the page's hidden senders (`POST /api/hidden`): about 100,000 addresses of a typical length.
BODY_CAPS = {"/api/hidden": 4 * 1024 * 1024}


_INTERNAL = (500, ErrorKind.INTERNAL, INTERNAL_MESSAGE)


def _too_large(cap: int) -> tuple[int, str, str]:
    return 413, ErrorKind.TOO_LARGE, f"the request body is larger than {cap // 1024} KiB"


def error_answer(kind: str, text: str, *, close: bool = False) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers (the security ones too) and body of a `{"error": kind, "message": text}` answer written below
    the app; `close` ends the connection, for a request whose body is left unread."""
    body = json.dumps(error_body(kind, text)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    return [*headers, *SECURITY_HEADERS], body


async def _answer(send: Send, status: int, kind: str, text: str) -> None:
    # A 413's body is unread, and must not be taken for the next request on the connection.
    headers, body = error_answer(kind, text, close=status == 413)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def split_host(host: str) -> str | None:
    """The host name of a `Host` header value without its port, lower-cased; None when malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end == -1:
            return None
        name, rest = host[: end + 1], host[end + 1 :]
    else:
        name, _, port = host.partition(":")
        rest = f":{port}" if port else ""
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None
    return name or None


class SecurityGuard:
    """ASGI wrapper: refuses foreign Hosts (DNS rebinding) and cross-site writes, and adds the security headers."""

    def __init__(self, app: ASGIApp, *, csrf_token: str, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.csrf_token = csrf_token.encode()
        self.allowed_hosts = LOOPBACK_HOSTS | {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # No route speaks WebSocket; refuse the handshake outright rather than trust a foreign Host.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        started = too_large = False
        received = 0
        cap = BODY_CAPS.get(scope["path"], MAX_BODY_BYTES)

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if too_large:  # the app's answer to a body cut short is replaced by the 413 below
                return
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _STRIPPED]
                message = {**message, "headers": [*headers, *SECURITY_HEADERS]}
            await send(message)

        async def limited_receive() -> Message:
            # Counted as it arrives (chunked bodies have no Content-Length): past the cap, the app sees the
            # client go away instead of more bytes, so no route ever holds more than its cap.
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        refusal = self._refusal(scope, cap)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        try:
            await self.app(scope, limited_receive, send_with_headers)
        except Exception:
            if started:
                raise
            if not too_large:
                # The server's own 500 would carry none of the headers: answer here, then let it log the error.
                await _answer(send, *_INTERNAL)
                raise
        if not started:  # a body cut short, or an app that never answered
            await _answer(send, *(_too_large(cap) if too_large else _INTERNAL))

    def _refusal(self, scope: Scope, cap: int) -> tuple[int, str, str] | None:
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            # Repeated security-relevant headers are refused below by comparing the joined value.
            name = key.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[name] = f"{headers[name]},{text}" if name in headers else text
        host = headers.get("host", "")
        if split_host(host) not in self.allowed_hosts:
            return (
                403,
                ErrorKind.BAD_HOST,
                "this viewer answers only to its own address (check GMAIL_STATS_ALLOWED_HOSTS)",
            )
        length = headers.get("content-length", "0")
        # Refused before a byte of the body is read (the server then stops reading, and closes).
        if not length.isdigit() or int(length) > cap:
            return _too_large(cap)
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return None
        # The order is part of the contract: content type, token, Origin, Sec-Fetch-Site.
        media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            return 415, ErrorKind.BAD_CONTENT_TYPE, "send the request body as application/json"
        token = headers.get(CSRF_HEADER, "").encode("latin-1")
        if not hmac.compare_digest(token, self.csrf_token):
            return 403, ErrorKind.CSRF, "missing or wrong X-Gmail-Stats-Csrf header; reload the page"
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, host):
            return 403, ErrorKind.CSRF, "cross-origin request refused"
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site.lower() not in ("same-origin", "none"):
            return 403, ErrorKind.CSRF, "cross-site request refused"
        return None

    def _same_origin(self, origin: str, host: str) -> bool:
        parts = urlsplit(origin.strip().lower())
        if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
            return False
        name = split_host(parts.netloc)
        # Loopback is served over plain http; a published name may sit behind a TLS proxy.
        schemes = ("http",) if name in LOOPBACK_HOSTS else ("http", "https")
        return parts.scheme in schemes and name in self.allowed_hosts and parts.netloc == host.strip().lower()
