"""The fake Google on a socket: a threaded HTTP server on 127.0.0.1 handing each request to a `FakeGoogle`.

Each response goes out in one write with TCP_NODELAY: a naive handler stalls keep-alive clients ~40 ms per request
(Nagle plus delayed ACK), which would flatter clients opening a connection per call.

Run it alone for manual trials: `python -m tests.fakes.google_server --port 8080 --messages 5000 --quota 250`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.fakes.google import FakeGoogle
from tests.fakes.google_wire import REASONS, batch_body, error_body, parse_inner, split_batch
from tests.fakes.mailbox import MIXES, Mailbox


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeGoogleServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(
        self, status: int, body: bytes, *, content_type: str = "application/json; charset=UTF-8", extra: str = ""
    ) -> None:
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n"
        )
        self.wfile.write(head.encode("latin-1") + body)  # one write: no Nagle/delayed-ACK stall

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        google = self.server.google
        split = urlsplit(self.path)
        if split.path == "/_fake/stats":  # for benches running the fake in another process
            with google.lock:
                stats = dict(google.calls)
            self._send(200, json.dumps(stats).encode())
            return
        if split.path == "/o/oauth2/auth":
            query = {k: v[0] for k, v in parse_qs(split.query).items()}
            self._send(302, b"", content_type="text/plain", extra=f"Location: {google.authorize(query)}\r\n")
            return
        status, body = google.gmail("GET", split.path, parse_qs(split.query), self.headers.get("Authorization"))
        self._send(status, body)

    def do_POST(self) -> None:
        google = self.server.google
        path = urlsplit(self.path).path
        body = self._body()
        if path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            google.count("token")
            status, answer = google.token(form)
            self._send(status, answer)
        elif path.startswith("/batch"):
            self._batch(body)
        else:
            self._send(404, error_body(404, "Not Found", "notFound", "NOT_FOUND"))

    def _batch(self, body: bytes) -> None:
        google = self.server.google
        google.count("batch")
        faults = google.faults
        if google.roll(faults.drop_batch_rate):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if google.roll(faults.stall_rate):
            time.sleep(faults.stall_seconds)
        faults.gate.pass_through()
        boundary = f"batch_{google.rng.getrandbits(64):016x}"
        answers = []
        for content_id, inner in split_batch(body, self.headers.get("Content-Type", "")):
            method, path, query, headers = parse_inner(inner)
            status, answer = google.gmail(method, path, query, headers.get("authorization"))
            answers.append((content_id, status, answer))
        self._send(200, batch_body(answers, boundary), content_type=f"multipart/mixed; boundary={boundary}")


class FakeGoogleServer(ThreadingHTTPServer):
    """Threaded, on 127.0.0.1; `close()` stops serving and shuts every open connection."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, google: FakeGoogle, *, port: int = 0) -> None:
        self.google = google
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)
        google.base_url = f"http://127.0.0.1:{self.server_address[1]}/"
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return self.google.base_url

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that timed out or was killed leaves a broken connection behind: expected, not news.
        pass

    def track(self, conn: socket.socket, *, add: bool) -> None:
        with self._conn_lock:
            (self._connections.add if add else self._connections.discard)(conn)

    def start(self) -> FakeGoogleServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self._thread.join()
        with self._conn_lock:
            for conn in list(self._connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self.server_close()

    def __enter__(self) -> FakeGoogleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="A fake Gmail API and OAuth server for manual trials and benches.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--quota", type=float, default=None, help="units/s per user (default: unlimited)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--mix", choices=sorted(MIXES), default="singles", help="conversation sizes")
    parser.add_argument("--drift", action="store_true", help="senders' activity changes over the mailbox's life")
    parser.add_argument("--write-credentials", type=Path, metavar="PATH", help="write a client-secret file here")
    parser.add_argument("--write-tokens", type=Path, metavar="PATH", help="write a ready token cache here")
    args = parser.parse_args()
    google = FakeGoogle(
        Mailbox.generate(args.messages, seed=args.seed, mix=MIXES[args.mix], drift=args.drift),
        quota_units_per_sec=args.quota,
    )
    server = FakeGoogleServer(google, port=args.port)
    if args.write_credentials:
        args.write_credentials.write_text(json.dumps(google.client_config()))
    if args.write_tokens:
        args.write_tokens.write_text(json.dumps(google.authorized_user_info()))
    print(f"fake Google on {server.base_url} with {args.messages} messages; Ctrl-C stops it", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
