"""A fake Google that the real google-api-python-client and google-auth-oauthlib talk to over HTTP: its state and
what it answers to each Gmail call (getProfile, messages.list/get, threads.get, history.list) and to the OAuth
authorize and token endpoints, with the injected faults and per-user quota of google_faults.py applied.

Gmail's wire format lives in google_wire.py; the HTTP server (and `python -m tests.fakes.google_server`, to run it
alone) in google_server.py.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from tests.fakes.google_faults import Faults, TokenBucket
from tests.fakes.google_wire import error_body, rate_limited_body, render_message, render_thread
from tests.fakes.mailbox import FakeMessage, Mailbox

COSTS = {"profile": 1, "list": 5, "get": 5, "thread": 10, "history": 2}
SCOPE = "https://www.googleapis.com/auth/gmail.metadata"


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
            return 429, rate_limited_body(self.faults.retry_after_seconds)
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
