"""The viewer's Docker API filter (docker/docker-api-filter.cfg) run by the real HAProxy in front of a fake engine
socket that records every byte it receives: what an attacker in the web process can send, and what gets through.

The engine is a fake on purpose: the question is what the filter forwards, and a recording socket answers it
exactly (tests/docker/test_docker_confinement.py shows the real engine behind it, in the whole stack)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.polling import wait_for

RUNNER = "gmstest-import-runner"
SCAN = "gmstest-scan-runner"
# The pools as the entrypoint passes them: each kind's runners, one alternation.
POOLS = f"{RUNNER}|{RUNNER}-2|{SCAN}|{SCAN}-2"
ENGINE_LINE = "    server engine /var/run/docker.sock"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


@dataclass
class Engine:
    """What reached the engine's socket, one entry per connection, as raw bytes."""

    received: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Recorder(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        engine: Engine = self.server.engine  # type: ignore[attr-defined]
        self.request.settimeout(5)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            pass
        with engine.lock:
            engine.received.append(data)
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK")


def require_haproxy() -> str:
    found = shutil.which("haproxy") or (os.path.exists("/usr/sbin/haproxy") and "/usr/sbin/haproxy")
    if found:
        return str(found)
    problem = "no haproxy: the API filter tests run Debian's (sudo apt install haproxy)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {problem}", pytrace=False)
    pytest.skip(problem)


@dataclass(frozen=True)
class Filter:
    socket: Path
    engine: Engine

    def send(self, raw: bytes) -> int | None:
        """The status of the filter's answer to `raw` sent in one write; None when it closes without one. What
        reached the engine before is forgotten first."""
        self.forwarded()
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(20)
            s.connect(str(self.socket))
            s.sendall(raw)
            answer = b""
            try:
                while b"\r\n" not in answer and (chunk := s.recv(4096)):
                    answer += chunk
            except ConnectionResetError:
                pass
        return int(answer.split()[1]) if answer.startswith(b"HTTP/") else None

    def forwarded(self) -> list[bytes]:
        with self.engine.lock:
            taken = list(self.engine.received)
            self.engine.received.clear()
        return taken


@pytest.fixture(scope="module")
def api_filter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Filter]:
    binary = require_haproxy()
    tmp = tmp_path_factory.mktemp("filter")
    engine_socket, filter_socket = tmp / "engine.sock", tmp / "filter.sock"
    config = (REPO_ROOT / "docker" / "docker-api-filter.cfg").read_text()
    assert config.count(ENGINE_LINE) == 1
    (tmp / "filter.cfg").write_text(config.replace(ENGINE_LINE, f"    server engine {engine_socket}"))
    engine = Engine()
    server = socketserver.ThreadingUnixStreamServer(str(engine_socket), _Recorder)
    server.engine = engine  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ["PATH"],
        "GMAIL_STATS_FILTER_SOCKET": str(filter_socket),
        "GMAIL_STATS_RUNNERS": POOLS,
    }
    log = tmp / "haproxy.log"
    with log.open("wb") as stderr:
        proxy = subprocess.Popen([binary, "-db", "-f", str(tmp / "filter.cfg")], env=env, stderr=stderr)
    try:
        wait_for(lambda: filter_socket.exists() or proxy.poll() is not None, timeout=30, what="the filter's socket")
        assert proxy.poll() is None, log.read_text()
        yield Filter(filter_socket, engine)
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=30)
        server.shutdown()
        server.server_close()


def _request(method: str, path: str, *headers: str, body: bytes = b"", version: str = "HTTP/1.1") -> bytes:
    head = [f"{method} {path} {version}", "Host: docker", "Connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _name(raw: bytes) -> str:
    """A test id: the request line and the headers that matter, without the fixed ones."""
    lines = [line.decode() for line in raw.split(b"\r\n\r\n")[0].split(b"\r\n")]
    return " ".join(line for line in lines if line not in ("Host: docker", "Connection: close"))


KILL = f"/v1.41/containers/{RUNNER}/kill"
START = f"/v1.41/containers/{RUNNER}/start"


@pytest.mark.parametrize(
    "raw",
    [
        _request("GET", "/_ping"),
        _request("GET", f"/v1.41/containers/{RUNNER}/json"),
        _request("POST", START, "Content-Length: 0"),  # what the Docker SDK (requests) sends without data
        _request("POST", f"/v1.41/containers/{SCAN}/stop?t=10"),
        _request("POST", f"/v1.41/containers/{SCAN}-2/start"),
        _request("GET", f"/v1.41/containers/{RUNNER}-2/logs?stderr=1&stdout=1&tail=200"),
        _request("POST", KILL + "?signal=SIGTERM", "Content-Length: 0"),
        _request("POST", KILL + "?signal=SIGKILL"),
        _request("POST", KILL),
    ],
    ids=_name,
)
def test_what_the_launcher_sends_gets_through(api_filter: Filter, raw: bytes) -> None:
    assert api_filter.send(raw) == 200
    (forwarded,) = api_filter.forwarded()
    assert forwarded.split(b"\r\n", 1)[0] == raw.split(b"\r\n", 1)[0]


@pytest.mark.parametrize(
    "raw",
    [
        # The kill verb's other signals: SIGSTOP would freeze a runner that holds the ingest lock.
        _request("POST", KILL + "?signal=SIGSTOP"),
        _request("POST", KILL + "?signal=19"),
        _request("POST", KILL + "?signal=sigstop"),
        _request("POST", KILL + "?signal=SIGTERM&signal=SIGSTOP"),
        _request("POST", KILL + "?signal=STOP"),
        # A name outside the pools, or one that only begins or ends like a runner's.
        _request("POST", f"/v1.41/containers/{RUNNER}-3/start"),
        _request("POST", f"/v1.41/containers/{RUNNER}-22/start"),
        _request("POST", f"/v1.41/containers/x{SCAN}/start"),
        # A body, whatever its framing.
        _request("POST", START, "Content-Length: 13", body=b'{"Binds":[1]}'),
        _request("POST", START, "Transfer-Encoding: chunked", body=b'd\r\n{"Binds":[1]}\r\n0\r\n\r\n'),
        _request("POST", START, "Content-Length: 0", "Content-Length: 13", body=b'{"Binds":[1]}'),
        _request("POST", START, "Content-Length: 0", "Transfer-Encoding: chunked", body=b"0\r\n\r\n"),
        # Other HTTP versions and the ways to HTTP/2.
        _request("GET", "/_ping", version="HTTP/1.0"),
        _request("GET", "/_ping", version="HTTP/2.0"),
        _request("GET", "/_ping", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA", "Connection: Upgrade"),
        _request("GET", "/_ping", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"),
    ],
    ids=_name,
)
def test_anything_else_is_refused_before_the_engine(api_filter: Filter, raw: bytes) -> None:
    assert api_filter.send(raw) in (400, 403, 505, None)
    assert api_filter.forwarded() == []


def test_http2_prior_knowledge_carries_no_body_to_the_engine(api_filter: Filter) -> None:
    """The h2 preface, then a HEADERS frame for `POST …/start` without content-length and a DATA frame with a
    HostConfig: the attack run's way past the "no body" rule. The filter speaks HTTP/1.1 only."""
    # HPACK literals without indexing: :method POST, :scheme http, :path …/start, :authority docker.
    block = b"".join(
        b"\x00" + bytes([len(k)]) + k + bytes([len(v)]) + v
        for k, v in ((b":method", b"POST"), (b":scheme", b"http"), (b":path", START.encode()), (b":authority", b"d"))
    )
    raw = (
        H2_PREFACE
        + _h2_frame(4, 0, 0, b"")  # SETTINGS
        + _h2_frame(1, 4, 1, block)  # HEADERS, END_HEADERS
        + _h2_frame(0, 1, 1, b'{"HostConfig":{"Privileged":true}}')  # DATA, END_STREAM
    )
    assert api_filter.send(raw) in (400, 403, 505, None)
    assert api_filter.forwarded() == []
