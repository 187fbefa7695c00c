"""Gmail's wire format as the fake Google speaks it: the JSON error envelope, message and thread resources trimmed
by a `fields` mask, and the multipart/mixed batch body both ways. Pure bytes and dicts: no state, no sockets."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.mailbox import FakeMessage

REASONS = {
    200: "OK",
    302: "Found",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
}


def error_body(code: int, message: str, reason: str, status: str) -> bytes:
    error = {"code": code, "message": message, "errors": [{"message": message, "domain": "global", "reason": reason}]}
    error["status"] = status
    return json.dumps({"error": error}).encode()


def rate_limited_body(retry_after_seconds: float | None) -> bytes:
    """Gmail's 429, with "Retry after <UTC time>" in the message when the fault asks for one."""
    message = "User-rate limit exceeded."
    if retry_after_seconds is not None:
        until = time.time() + retry_after_seconds
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(until)) + f".{int(until % 1 * 1000):03d}Z"
        message += f"  Retry after {stamp}"
    return error_body(429, message, "rateLimitExceeded", "RESOURCE_EXHAUSTED")


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
    """Method, path, query and lower-cased headers of one batch part's HTTP request."""
    head = inner.partition(b"\n\n")[0].decode("latin-1")
    lines = head.split("\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    split = urlsplit(target)
    return method, split.path, parse_qs(split.query), headers


def batch_body(answers: list[tuple[str, int, bytes]], boundary: str) -> bytes:
    """The multipart/mixed answer to a batch: one `application/http` part per (Content-ID, status, JSON body)."""
    out = []
    for content_id, status, answer in answers:
        response_id = "<response-" + content_id.strip("<>") + ">"
        out.append(
            f"--{boundary}\r\nContent-Type: application/http\r\nContent-ID: {response_id}\r\n\r\n"
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
            "Content-Type: application/json; charset=UTF-8\r\n"
            f"Content-Length: {len(answer)}\r\n\r\n".encode()
            + answer
            + b"\r\n"
        )
    return b"".join(out) + f"--{boundary}--\r\n".encode()
