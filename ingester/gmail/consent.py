"""The OAuth consent wait: a loopback listener that completes only on a request carrying our `state`.

The stock `run_local_server` answers exactly one request, so a favicon fetch or a port probe would end the flow;
this listener serves every request and ignores those without the right `state`. It polls so a signal stops it.

When the browser runs on another machine the redirect lands on that machine's 127.0.0.1 (an unreachable page);
the person may then paste the address it shows, on a terminal (`PastedLines`), or on the page, whose viewer sends
it here as the same GET. A pasted address passes the same `state` check as the redirect; the first answer wins.

Each account's scan listens on the same port, so the listener also answers `OWNER_PATH` with the account whose
consent it waits for: a second account's scan that finds the port taken asks it, and says whose consent to finish.
"""

from __future__ import annotations

import errno
import http.client
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

from ingester.gmail.gmail import AuthCancelled
from shared.accounts import DEFAULT_ACCOUNT, is_name
from shared.errors import ConsentPortBusy, ErrorKind, GmailAuthError

# A consent redirect address is a few hundred characters; a longer paste is not one.
MAX_PASTED_CHARS = 4096

# What a listener answers with `{"account": NAME}`: the account whose consent holds the port.
OWNER_PATH = "/gmail-stats/consent-owner"

_POLL_SECONDS = 0.2
_OWNER_TIMEOUT = 1.0  # a port's holder that is not one of our listeners may never answer
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


class PasteRefused(ValueError):
    """A pasted address that is not this consent's redirect; the message is the one line to show."""


def pasted_callback(text: str, *, state: str) -> Callback:
    """The consent code in an address the person pasted (the one their browser ended on); raises `PasteRefused`
    with the reason when it is too long, belongs to another consent (`state`) or carries no `code`."""
    text = text.strip()
    if len(text) > MAX_PASTED_CHARS:
        raise PasteRefused(f"that is longer than a consent address ({MAX_PASTED_CHARS} characters at most)")
    query = parse_qs(urlsplit(text).query)
    if query.get("state", [""])[0] != state:
        raise PasteRefused(
            "that address is not from this consent (its state differs); paste the address the browser showed "
            "after the link printed above"
        )
    code = query.get("code", [""])[0]
    if not code:
        error = query.get("error", [""])[0]
        why = f"Google answered {error}" if error else "it carries no code"
        raise PasteRefused(f"that address gives no consent ({why}); open the link again and allow access")
    return Callback(code=code, error=None)


class PastedLines:
    """Lines typed or pasted on a stream (a terminal's stdin), read by a daemon thread once `start` is called, so
    the consent wait keeps serving the redirect while nobody types; end of input simply ends the reading."""

    def __init__(self, readline: Callable[[], str]) -> None:
        self._readline = readline
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            threading.Thread(target=self._read, name="pasted-consent", daemon=True).start()

    def _read(self) -> None:
        try:
            while line := self._readline():
                self._lines.put(line)
        except (OSError, ValueError):  # a closed or unreadable stdin: only the redirect can answer then
            return

    def take(self) -> list[str]:
        """The non-blank lines read since the last call."""
        taken: list[str] = []
        while not self._lines.empty():
            line = self._lines.get_nowait()
            if line.strip():
                taken.append(line)
        return taken


class _Server(HTTPServer):
    allow_reuse_address = True
    timeout = _POLL_SECONDS

    def __init__(self, address: tuple[str, int], *, state: str, account: str) -> None:
        self.state = state
        self.owner = json.dumps({"account": account}).encode()
        self.callback: Callback | None = None
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 1  # a silent connection (a port probe) must not hold the loop past the 2 s cancel promise

    def do_GET(self) -> None:
        if urlsplit(self.path).path == OWNER_PATH:
            self._answer(200, self.server.owner, "application/json")
            return
        callback = parse_callback(self.path, state=self.server.state)
        if callback is not None and self.server.callback is None:
            self.server.callback = callback
        body = _DONE_PAGE if callback is not None else _IGNORED_PAGE
        self._answer(200 if callback is not None else 404, body, "text/html; charset=utf-8")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the consent URL is the only thing we print
        pass


def consent_owner(bind: str, port: int, *, timeout: float = _OWNER_TIMEOUT) -> str | None:
    """The account whose consent listener holds `bind:port`, or None when what holds it is not one of ours
    (no answer within `timeout`, or not our answer)."""
    host = "127.0.0.1" if bind in ("", "0.0.0.0") else "::1" if bind == "::" else bind
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", OWNER_PATH)
        response = connection.getresponse()
        answer = json.loads(response.read(4096)) if response.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        connection.close()
    account = answer.get("account") if isinstance(answer, dict) else None
    return account if isinstance(account, str) and is_name(account) else None


def _port_taken(bind: str, port: int, exc: OSError) -> GmailAuthError:
    """The one line for a consent port that is taken: whose consent waits there, or that another program has it."""
    where = f"{bind}:{port}"
    if exc.errno != errno.EADDRINUSE:
        return GmailAuthError(
            f"cannot listen for Google's consent redirect on {where} ({exc.strerror}); "
            "free that port or set GMAIL_STATS_OAUTH_PORT",
            kind=ErrorKind.AUTH_REQUIRED,
        )
    owner = consent_owner(bind, port)
    if owner is not None:
        return ConsentPortBusy(
            f"account {owner}'s consent is pending on {where}: finish or cancel that consent (or wait until it "
            "times out), then run this scan again",
        )
    return GmailAuthError(
        f"another program holds port {port}, where the consent redirect must arrive; stop it, or set "
        "GMAIL_STATS_OAUTH_PORT to a free port",
        kind=ErrorKind.AUTH_REQUIRED,
    )


def wait_for_callback(
    *,
    bind: str,
    port: int,
    state: str,
    timeout: float,
    cancel: threading.Event,
    account: str = DEFAULT_ACCOUNT,
    pasted: PastedLines | None = None,
    on_refused: Callable[[str], None] = lambda line: None,
    on_listening: Callable[[], None] = lambda: None,
) -> Callback:
    """Serves the loopback redirect until a request with our `state` arrives, or a valid address is `pasted`
    (a refused one is told to `on_refused` in one line, and the wait goes on); raises on timeout or cancel.

    `on_listening` runs once the port is bound: the consent link is shown only then, so a browser that follows it
    at once never finds the callback port closed. A port another `account`'s consent holds fails at once, naming
    that account (`ConsentPortBusy`)."""
    try:
        server = _Server((bind, port), state=state, account=account)
    except OSError as exc:
        raise _port_taken(bind, port, exc) from exc
    try:
        on_listening()
    except BaseException:
        server.server_close()
        raise
    deadline = time.monotonic() + timeout
    if pasted is not None:
        pasted.start()
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
            server.handle_request()  # at most _POLL_SECONDS, so a paste is picked up promptly
            for line in pasted.take() if pasted is not None and server.callback is None else ():
                try:
                    server.callback = pasted_callback(line, state=state)
                    break
                except PasteRefused as refused:
                    on_refused(str(refused))
        return server.callback
    finally:
        server.server_close()
