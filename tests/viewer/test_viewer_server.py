"""The viewer as it is served (`python -m viewer`, uvicorn), spoken to over raw sockets: the answers uvicorn's
HTTP protocol writes itself carry the security headers too, and a huge body is refused without being read."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, ingester_env
from tests.support.net import free_port
from tests.support.viewer import seed, wait_for

pytestmark = pytest.mark.slow

SECURITY = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Served:
    port: int
    pid: int

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def exchange(self, raw: bytes) -> Answer:
        with self.connect() as sock:
            sock.sendall(raw)
            return _read_answer(sock)

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


def _read_answer(sock: socket.socket) -> Answer:
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    with contextlib.suppress(ConnectionResetError):
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return Answer(status=int(lines[0].split()[1]), headers=headers, body=body)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("served")
    seed(folder / "stats.db")
    port = free_port()
    env = ingester_env(GMAIL_STATS_DB=str(folder / "stats.db"), GMAIL_STATS_IMPORT_DIR=str(folder / "imports"))
    process = subprocess.Popen(
        [sys.executable, "-m", "viewer", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Served(port=port, pid=process.pid)

    def up() -> bool:
        try:
            return server.exchange(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").status == 200
        except OSError:
            return False

    try:
        wait_for(up, timeout=60, interval=0.1)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=30)


def _assert_guarded(answer: Answer) -> None:
    for name, value in SECURITY.items():
        assert answer.headers.get(name) == value, (name, answer)
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"GET /api/status HTTP/1.1\r\n\r\n", id="missing-host"),
        pytest.param(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n", id="two-hosts"),
        # Still arriving past h11's 16 KiB limit for an incomplete head (no blank line yet).
        pytest.param(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100_000, id="oversized-head"),
        pytest.param(b"GARBAGE\r\n\r\n", id="malformed-request-line"),
        pytest.param(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n", id="malformed-header"),
        pytest.param(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            id="conflicting-lengths",
        ),
    ],
)
def test_the_servers_own_400s_carry_the_security_headers(served: Served, raw: bytes) -> None:
    answer = served.exchange(raw)
    assert answer.status == 400
    _assert_guarded(answer)
    assert answer.headers["content-type"] == "application/json"
    assert answer.body == b'{"error": "bad_request", "message": "malformed HTTP request"}'


def test_requests_that_reach_the_app_carry_them_too(served: Served) -> None:
    ok = served.exchange(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    no_host_http10 = served.exchange(b"GET /api/status HTTP/1.0\r\n\r\n")  # HTTP/1.0 may omit Host: the guard's 403
    upgrade = served.exchange(
        b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    assert (ok.status, no_host_http10.status, upgrade.status) == (200, 403, 200)  # no WebSocket: plain HTTP
    for answer in (ok, no_host_http10, upgrade):
        _assert_guarded(answer)
    assert "server" not in ok.headers


def test_a_declared_huge_body_is_refused_at_once(served: Served) -> None:
    with served.connect() as sock:
        sock.sendall(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1073741824\r\n\r\n" + b"{" * 1000
        )
        answer = _read_answer(sock)  # answered without waiting for the other 1,073,740,824 bytes
    assert answer.status == 413
    assert answer.headers["connection"] == "close"
    _assert_guarded(answer)


def test_a_streamed_body_is_cut_off_without_being_held(served: Served) -> None:
    before = served.rss_kib()
    chunk = b"x" * (256 * 1024)
    sent = 0
    answer = None
    status = served.exchange(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    token = json.loads(status.body)["csrf_token"].encode()  # the caller has the token, as in the attack
    with served.connect() as sock:
        sock.sendall(
            b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"X-Gmail-Stats-Csrf: " + token + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        deadline = time.monotonic() + 120
        while sent < 1024**3 and time.monotonic() < deadline:  # up to 1 GiB, as the attack sent
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        answer = _read_answer(sock)
    assert answer.status == 413
    assert answer.body == b'{"error": "too_large", "message": "the request body is larger than 16 KiB"}'
    _assert_guarded(answer)
    assert sent < 64 * 1024 * 1024  # refused long before the client was done
    assert served.rss_kib() - before < 32 * 1024  # and never held in the server's memory
