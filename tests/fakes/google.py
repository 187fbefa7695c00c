"""A fake Google that the real google-api-python-client and google-auth-oauthlib talk to over HTTP.

Speaks Gmail's wire format (getProfile, messages.list/get, threads.get, history.list, the batch endpoint, Google's
JSON error envelope), the OAuth authorize and token endpoints, and enforces a per-user quota as a token bucket in
units/s.
Faults are injectable. Each response goes out in one write with TCP_NODELAY: a naive handler stalls keep-alive
clients ~40 ms per request (Nagle plus delayed ACK), which would flatter clients opening a connection per call.

Run it alone for manual trials: `python -m tests.fakes.google --port 8080 --messages 5000 --quota 250`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.fakes.mailbox import MIXES, FakeMessage, Mailbox

COSTS = {"profile": 1, "list": 5, "get": 5, "thread": 10, "history": 2}
SCOPE = "https://www.googleapis.com/auth/gmail.metadata"
_REASONS = {
    200: "OK",
    302: "Found",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
}


class BatchGate:
    """Holds batch requests so a test can act while a scan is certainly mid-flight, whatever the machine's speed.

    `hold_after(n)` lets `n` more batches through, then makes each later one wait, unanswered, until `release()`;
    `holding()` says whether one is waiting now (the scan is inside a fetch, with more to come).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._budget: int | None = None  # None: open
        self._waiting = 0

    def hold_after(self, batches: int) -> None:
        with self._cond:
            self._budget = batches

    def release(self) -> None:
        with self._cond:
            self._budget = None
            self._cond.notify_all()

    def holding(self) -> bool:
        with self._cond:
            return self._waiting > 0

    def pass_through(self) -> None:
        """Called by each batch before it is answered."""
        with self._cond:
            if self._budget is None:
                return
            if self._budget > 0:
                self._budget -= 1
                return
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._budget is None)
            finally:
                self._waiting -= 1


@dataclass(slots=True)
class Faults:
    """What to break. Rates are probabilities per Gmail call (each call inside a batch counts)."""

    error_5xx_rate: float = 0.0
    storm_429_rate: float = 0.0
    retry_after_seconds: float | None = None  # add "Retry after <time>" to 429 messages
    drop_batch_rate: float = 0.0  # close the connection without answering a batch
    stall_seconds: float = 0.0  # with stall_rate: answer a batch only after this long (client timeouts)
    stall_rate: float = 0.0
    deleted: set[str] = field(default_factory=set)  # listed, but messages.get answers 404
    always_fail: set[str] = field(default_factory=set)  # messages.get (and threads.get of its thread) answer 500
    trashed: set[str] = field(default_factory=set)  # listed, but moved to Trash before it is fetched
    history_expired: bool = False
    consent: str = "approve"  # or "deny", "policy_enforced"
    list_delay_seconds: float = 0.0
    # When set, messages.list and history.list of the first mailbox wait for it (a run that lasts until released).
    first_box_gate: threading.Event | None = None
    next_429: int = 0  # the next N Gmail calls answer 429 whatever the quota
    gate: BatchGate = field(default_factory=BatchGate)  # batches held until released


class TokenBucket:
    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self, units: int) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= units:
                self.tokens -= units
                return True
            return False


def error_body(code: int, message: str, reason: str, status: str) -> bytes:
    error = {"code": code, "message": message, "errors": [{"message": message, "domain": "global", "reason": reason}]}
    error["status"] = status
    return json.dumps({"error": error}).encode()


class FakeGoogle:
    """State and behaviour; `FakeGoogleServer` puts it on a socket."""

    def __init__(self, mailbox: Mailbox, *, quota_units_per_sec: float | None = None, seed: int = 11) -> None:
        self.mailbox = mailbox
        self.faults = Faults()
        self.bucket = TokenBucket(quota_units_per_sec, max(quota_units_per_sec, 250.0)) if quota_units_per_sec else None
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.served: dict[str, int] = {}  # message id -> times its metadata was answered (messages.get or threads.get)
        self.page_generation = 0
        self.codes: dict[str, str] = {}
        self.access_tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.auth_requests: list[dict[str, str]] = []
        self._serial = itertools.count(1)
        self.base_url = ""
        # More mailboxes behind the same endpoints, each reached by the tokens issued for it (`add_mailbox`).
        self.mailboxes: dict[str, Mailbox] = {"": mailbox}
        self.addresses: dict[str, str] = {"": "someone@example.com"}
        self.token_box: dict[str, str] = {}
        self._serving = threading.local()

    def add_mailbox(self, name: str, mailbox: Mailbox, *, address: str) -> None:
        with self.lock:
            self.mailboxes[name] = mailbox
            self.addresses[name] = address

    def _box_name(self) -> str:
        return str(getattr(self._serving, "box", ""))

    def _current(self) -> Mailbox:
        return self.mailboxes[self._box_name()]

    # --- bookkeeping -------------------------------------------------------------------------------------
    def count(self, name: str) -> None:
        with self.lock:
            self.calls[name] = self.calls.get(name, 0) + 1

    def _served(self, ids: list[str]) -> None:
        with self.lock:
            for gmail_id in ids:
                self.served[gmail_id] = self.served.get(gmail_id, 0) + 1

    def gmail_calls(self) -> int:
        with self.lock:
            return sum(v for k, v in self.calls.items() if k in COSTS)

    def roll(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self.lock:
            return self.rng.random() < rate

    def issue_tokens(self, box: str = "") -> tuple[str, str]:
        serial = next(self._serial)
        access, refresh = f"ya29.fake-{serial}", f"1//fake-refresh-{serial}"
        with self.lock:
            self.access_tokens.add(access)
            self.refresh_tokens.add(refresh)
            self.token_box[access] = self.token_box[refresh] = box
        return access, refresh

    def revoke_refresh_tokens(self) -> None:
        with self.lock:
            self.refresh_tokens.clear()
            self.access_tokens.clear()

    def expire_page_tokens(self) -> None:
        with self.lock:
            self.page_generation += 1

    def client_config(self) -> dict[str, Any]:
        return {
            "installed": {
                "client_id": "fake-client.apps.googleusercontent.com",
                "client_secret": "fake-secret",
                "project_id": "fake-project",
                "auth_uri": self.base_url + "o/oauth2/auth",
                "token_uri": self.base_url + "token",
                "redirect_uris": ["http://localhost"],
            }
        }

    def authorized_user_info(self, box: str = "") -> dict[str, Any]:
        """A token cache as `Credentials.to_json()` writes it, with a fresh refresh token of this fake (for the
        mailbox `box`, the first one by default)."""
        access, refresh = self.issue_tokens(box)
        config = self.client_config()["installed"]
        return {
            "token": access,
            "refresh_token": refresh,
            "token_uri": config["token_uri"],
            "client_id": config["client_id"],
            "client_secret": config["client_secret"],
            "scopes": [SCOPE],
        }

    # --- Gmail -------------------------------------------------------------------------------------------------
    def gmail(self, method: str, path: str, query: dict[str, list[str]], auth: str | None) -> tuple[int, bytes]:
        """One Gmail call (top level or inside a batch): status and JSON body."""
        parts = path.strip("/").split("/")
        if parts[:4] != ["gmail", "v1", "users", "me"] or method != "GET":
            return 404, error_body(404, "Not Found", "notFound", "NOT_FOUND")
        rest = parts[4:]
        routes: dict[tuple[str, ...], str] = {("profile",): "profile", ("messages",): "list", ("history",): "history"}
        name = routes.get(tuple(rest))
        if name is None and len(rest) == 2 and rest[0] in ("messages", "threads"):
            name = "get" if rest[0] == "messages" else "thread"
        if name is None:
            return 404, error_body(404, "Not Found", "notFound", "NOT_FOUND")
        self.count(name)
        token = (auth or "").removeprefix("Bearer ").strip()
        with self.lock:
            authorised = token in self.access_tokens
            self._serving.box = self.token_box.get(token, "")
        if not authorised:
            return 401, error_body(
                401, "Request had invalid authentication credentials.", "authError", "UNAUTHENTICATED"
            )
        if (
            self._forced_429()
            or self.roll(self.faults.storm_429_rate)
            or (self.bucket is not None and not self.bucket.take(COSTS[name]))
        ):
            message = "User-rate limit exceeded."
            if self.faults.retry_after_seconds is not None:
                until = time.time() + self.faults.retry_after_seconds
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(until)) + f".{int(until % 1 * 1000):03d}Z"
                message += f"  Retry after {stamp}"
            return 429, error_body(429, message, "rateLimitExceeded", "RESOURCE_EXHAUSTED")
        if self.roll(self.faults.error_5xx_rate):
            code = self.rng.choice((500, 502, 503, 504))
            return code, error_body(code, "Backend Error", "backendError", "UNAVAILABLE")
        if name == "profile":
            return 200, self._profile()
        if name == "list":
            return self._list(query)
        if name == "history":
            return self._history(query)
        if name == "thread":
            return self._thread(rest[1], query)
        return self._get(rest[1], query)

    def _forced_429(self) -> bool:
        with self.lock:
            if self.faults.next_429 > 0:
                self.faults.next_429 -= 1
                return True
        return False

    def _profile(self) -> bytes:
        box = self._current()
        with box.lock:
            body = {
                "emailAddress": self.addresses[self._box_name()],
                "messagesTotal": len(box.order),
                "threadsTotal": len(box.threads),
                "historyId": str(box.history_id),
            }
        return json.dumps(body).encode()

    def _gate(self) -> None:
        gate = self.faults.first_box_gate
        if gate is not None and self._box_name() == "":
            gate.wait(120)

    def _list(self, query: dict[str, list[str]]) -> tuple[int, bytes]:
        self._gate()
        if self.faults.list_delay_seconds:
            time.sleep(self.faults.list_delay_seconds)
        size = min(int(query.get("maxResults", ["100"])[0]), 500)
        include = query.get("includeSpamTrash", ["false"])[0] == "true"
        ids = self._current().listed(include_spam_trash=include)
        start = 0
        token = query.get("pageToken", [""])[0]
        if token:
            generation, _, offset = token.partition("-")
            if not offset.isdigit() or generation != f"p{self.page_generation}":
                return 400, error_body(400, "Invalid pageToken", "invalidArgument", "INVALID_ARGUMENT")
            start = int(offset)
        page = ids[start : start + size]
        messages = self._current().messages
        listed = [{"id": i, "threadId": messages[i].thread_id} for i in page]
        body: dict[str, Any] = {"messages": listed, "resultSizeEstimate": len(ids)}
        if start + size < len(ids):
            body["nextPageToken"] = f"p{self.page_generation}-{start + size}"
        return 200, json.dumps(body).encode()

    def _history(self, query: dict[str, list[str]]) -> tuple[int, bytes]:
        self._gate()
        start = int(query.get("startHistoryId", ["0"])[0])
        if self.faults.history_expired or start < self._current().history_floor:
            return 404, error_body(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
        size = min(int(query.get("maxResults", ["100"])[0]), 500)
        offset = int(query.get("pageToken", ["0"])[0] or 0)
        added = self._current().added_since(start)
        page = added[offset : offset + size]
        history = [
            {
                "id": str(m.history_id),
                "messagesAdded": [
                    {"message": {"id": m.gmail_id, "threadId": m.thread_id, "labelIds": list(m.label_ids)}}
                ],
            }
            for m in page
        ]
        body: dict[str, Any] = {"history": history, "historyId": str(self._current().history_id)}
        if offset + size < len(added):
            body["nextPageToken"] = str(offset + size)
        return 200, json.dumps(body).encode()

    def _get(self, gmail_id: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        message = self._current().messages.get(gmail_id)
        if message is None or gmail_id in self.faults.deleted:
            return 404, error_body(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
        if gmail_id in self.faults.always_fail:
            return 500, error_body(500, "Backend Error", "backendError", "INTERNAL")
        self._served([gmail_id])
        return 200, json.dumps(render_message(self._as_now(message), query)).encode()

    def _as_now(self, message: FakeMessage) -> FakeMessage:
        if message.gmail_id in self.faults.trashed:
            return replace(message, label_ids=(*message.label_ids, "TRASH"))
        return message

    def _thread(self, thread_id: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        """`threads.get`: every message of the conversation, Spam and Trash included, oldest first (as Gmail)."""
        members = [m for m in self._current().thread(thread_id) if m.gmail_id not in self.faults.deleted]
        if not members:
            return 404, error_body(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
        if any(m.gmail_id in self.faults.always_fail for m in members):
            return 500, error_body(500, "Backend Error", "backendError", "INTERNAL")
        self._served([m.gmail_id for m in members])
        return 200, json.dumps(render_thread(thread_id, [self._as_now(m) for m in members], query)).encode()

    # --- OAuth -----------------------------------------------------------------------------------------------
    def authorize(self, query: dict[str, str]) -> str:
        """The consent page's answer: where the browser is redirected to."""
        with self.lock:
            self.auth_requests.append(query)
        target = query.get("redirect_uri", "")
        answer: dict[str, str] = {"state": query.get("state", "")}
        if self.faults.consent == "approve":
            code = f"4/fake-code-{next(self._serial)}"
            with self.lock:
                self.codes[code] = target
            answer |= {"code": code, "scope": query.get("scope", "")}
        else:
            answer["error"] = "access_denied" if self.faults.consent == "deny" else self.faults.consent
        return f"{target}?{urlencode(answer)}"

    def token(self, form: dict[str, str]) -> tuple[int, bytes]:
        grant = form.get("grant_type")
        invalid = (400, json.dumps({"error": "invalid_grant", "error_description": "Bad Request"}).encode())
        if grant == "authorization_code":
            with self.lock:
                redirect = self.codes.pop(form.get("code", ""), None)
            if redirect is None or redirect != form.get("redirect_uri"):
                return invalid
            access, refresh = self.issue_tokens()
            body = {"access_token": access, "expires_in": 3599, "refresh_token": refresh, "scope": SCOPE}
            return 200, json.dumps(body | {"token_type": "Bearer"}).encode()
        if grant == "refresh_token":
            with self.lock:
                known = form.get("refresh_token") in self.refresh_tokens
                box = self.token_box.get(form.get("refresh_token", ""), "")
            if not known:
                revoked = {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
                return 400, json.dumps(revoked).encode()
            access, _ = self.issue_tokens(box)
            body = {"access_token": access, "expires_in": 3599, "scope": SCOPE, "token_type": "Bearer"}
            return 200, json.dumps(body).encode()
        return invalid


def render_message(message: FakeMessage, query: dict[str, list[str]]) -> dict[str, Any]:
    """`format=metadata` with `metadataHeaders`, trimmed by a `fields` mask of top-level names and payload/headers."""
    wanted = {h.lower() for h in query.get("metadataHeaders", [])}
    headers = [{"name": k, "value": v} for k, v in message.headers if not wanted or k.lower() in wanted]
    full: dict[str, Any] = {
        "id": message.gmail_id,
        "threadId": message.thread_id,
        "labelIds": list(message.label_ids),
        "snippet": "",
        "historyId": str(message.history_id),
        "internalDate": str(message.internal_date_ms),
        "sizeEstimate": message.size_estimate,
        "payload": {"mimeType": "text/plain", "headers": headers},
    }
    return apply_mask(full, query.get("fields", [""])[0])


def apply_mask(full: dict[str, Any], mask: str) -> dict[str, Any]:
    """A `fields` mask of top-level names and `payload/headers` (what our client asks for)."""
    if not mask:
        return full
    trimmed: dict[str, Any] = {}
    for item in mask.split(","):
        top, _, sub = item.strip().partition("/")
        if top in full:
            trimmed[top] = {sub: full[top][sub]} if sub and isinstance(full[top], dict) else full[top]
    return trimmed


def render_thread(thread_id: str, members: list[FakeMessage], query: dict[str, list[str]]) -> dict[str, Any]:
    """`threads.get?format=metadata`, with a `fields` mask like `id,messages(id,labelIds,payload/headers)`."""
    mask = query.get("fields", [""])[0]
    top, inner = mask, ""
    if "messages(" in mask:
        head, _, rest = mask.partition("messages(")
        inner, _, tail = rest.partition(")")
        top = ",".join(p for p in (head.strip(","), "messages", tail.strip(",")) if p)
    message_query = {**query, "fields": [inner]}
    full: dict[str, Any] = {
        "id": thread_id,
        "historyId": str(max(m.history_id for m in members)),
        "messages": [render_message(m, message_query) for m in members],
    }
    return apply_mask(full, top)


def split_batch(body: bytes, content_type: str) -> list[tuple[str, bytes]]:
    """(Content-ID, inner HTTP request) of each part of a multipart/mixed batch body."""
    boundary = ""
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip('"')
    parts = []
    for chunk in body.split(b"--" + boundary.encode())[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk.replace(b"\r\n", b"\n").strip(b"\n")
        head, _, inner = chunk.partition(b"\n\n")
        content_id = ""
        for line in head.split(b"\n"):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-id":
                content_id = value.strip()
        parts.append((content_id, inner))
    return parts


def parse_inner(inner: bytes) -> tuple[str, str, dict[str, list[str]], dict[str, str]]:
    head = inner.partition(b"\n\n")[0].decode("latin-1")
    lines = head.split("\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    split = urlsplit(target)
    return method, split.path, parse_qs(split.query), headers


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
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
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
        out = []
        for content_id, inner in split_batch(body, self.headers.get("Content-Type", "")):
            method, path, query, headers = parse_inner(inner)
            status, answer = google.gmail(method, path, query, headers.get("authorization"))
            response_id = "<response-" + content_id.strip("<>") + ">"
            out.append(
                f"--{boundary}\r\nContent-Type: application/http\r\nContent-ID: {response_id}\r\n\r\n"
                f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                "Content-Type: application/json; charset=UTF-8\r\n"
                f"Content-Length: {len(answer)}\r\n\r\n".encode()
                + answer
                + b"\r\n"
            )
        payload = b"".join(out) + f"--{boundary}--\r\n".encode()
        self._send(200, payload, content_type=f"multipart/mixed; boundary={boundary}")


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
