"""How the viewer is served: uvicorn on its pure-Python h11 protocol, with the security headers on the 400s that
the protocol writes itself (a missing or repeated Host, oversized headers, a malformed request line).

Those answers never reach the ASGI app, so `SecurityGuard` cannot add its headers to them; this class does.
"""

from __future__ import annotations

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from viewer.web.security import SECURITY_HEADERS

_BAD_REQUEST = b'{"error": "bad_request", "message": "malformed HTTP request"}'


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol whose own 400 response carries the security headers and the error shape."""

    def send_400_response(self, msg: str) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_BAD_REQUEST)).encode()),
            (b"connection", b"close"),
            *SECURITY_HEADERS,
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=_BAD_REQUEST),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


def server_config(app: ASGIApp, *, host: str, port: int, log_level: str = "info") -> uvicorn.Config:
    """The one uvicorn configuration `viewer.__main__` serves (tests start the same one)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # Pinned, not "auto": httptools (if ever installed) writes its own 400s, which this class would not cover.
        http=GuardedH11Protocol,
        ws="none",  # no route speaks WebSocket; a library's own handshake errors would lack the headers
        proxy_headers=False,
        server_header=False,
        log_level=log_level,
    )
