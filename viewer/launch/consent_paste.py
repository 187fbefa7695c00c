"""Consent pasted on the page: the address a browser on another machine ended on, checked here and handed to the
scan's own consent listener as the GET Google's redirect would have made.

The viewer never forwards the pasted text: it takes only `state` and `code` from it (bounded, strict characters),
builds `GET /?state=…&code=…` itself, and sends it to the listener the launcher names (loopback for a child
process, the scan runner's container on the stack network under Docker). It writes nothing: the ingester checks
the state again, trades the code with Google and records the outcome on its run row.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

from shared.errors import ErrorKind
from viewer.errors import ApiError

MAX_ADDRESS_CHARS = 4096
# What OAuth states (oauthlib: letters and digits) and Google's codes (`4/0Ab…`) are made of, once decoded.
_VALUE = re.compile(r"[A-Za-z0-9._~/+-]{1,1024}")
# The listener answers within a second (ingester/gmail/consent.py); a little more for a loaded machine.
_DELIVERY_TIMEOUT = 10.0


class BadPaste(ApiError):
    """Pasted text that is not this consent's redirect address; the message is the one line the page shows."""

    def __init__(self, message: str) -> None:
        super().__init__(422, ErrorKind.BAD_REQUEST, message)


@dataclass(frozen=True, slots=True)
class PastedConsent:
    state: str
    code: str


@dataclass(frozen=True, slots=True)
class AwaitedConsent:
    """What the scan's consent link (`auth_url` on its run row) says it waits for."""

    state: str
    port: int


def parse_pasted(text: str) -> PastedConsent:
    """The `state` and `code` of a pasted redirect address (`http://127.0.0.1:8765/?state=…&code=…`)."""
    text = text.strip()
    if not text:
        raise BadPaste("paste the address your browser showed after you allowed access")
    if len(text) > MAX_ADDRESS_CHARS:
        raise BadPaste(f"that is longer than a consent address ({MAX_ADDRESS_CHARS} characters at most)")
    query = parse_qs(urlsplit(text).query, max_num_fields=32)
    codes, states = query.get("code", []), query.get("state", [])
    if not codes:
        error = (query.get("error") or [""])[0]
        if _VALUE.fullmatch(error):
            raise BadPaste(f"Google answered {error}, not a consent; open the consent page again and allow access")
        raise BadPaste("that address has no consent code; paste the whole address the browser ended on")
    if len(codes) != 1 or len(states) != 1 or not _VALUE.fullmatch(codes[0]) or not _VALUE.fullmatch(states[0]):
        raise BadPaste("that is not the address Google sent the browser to; paste it exactly as the browser shows it")
    return PastedConsent(state=states[0], code=codes[0])


def awaited_consent(auth_url: str | None) -> AwaitedConsent | None:
    """The state and loopback port of a consent link, or None when it is not one the ingester writes."""
    if not auth_url:
        return None
    query = parse_qs(urlsplit(auth_url).query)
    state = (query.get("state") or [""])[0]
    redirect = urlsplit((query.get("redirect_uri") or [""])[0])
    try:
        port = redirect.port
    except ValueError:
        return None
    if not state or redirect.scheme != "http" or redirect.hostname != "127.0.0.1" or port is None:
        return None
    return AwaitedConsent(state=state, port=port)


def deliver(pasted: PastedConsent, *, host: str, port: int, run_id: int) -> None:
    """Sends the redirect's GET to the listener; raises `ApiError` unless it took the answer (HTTP 200: the
    listener of ingester/gmail/consent.py answers 404 to an address that is not from its consent)."""
    connection = http.client.HTTPConnection(host, port, timeout=_DELIVERY_TIMEOUT)
    try:
        path = "/?" + urlencode({"state": pasted.state, "code": pasted.code})
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Connection": "close"})
        response = connection.getresponse()
        response.read()
    except (OSError, http.client.HTTPException) as exc:  # nothing listens, or no HTTP answer
        raise ApiError(409, ErrorKind.NOT_RUNNING, f"run {run_id} is no longer waiting for consent") from exc
    finally:
        connection.close()
    if response.status == 404:
        raise BadPaste("the scan refused that address: it is not from this consent")
    if response.status != 200:
        raise ApiError(409, ErrorKind.NOT_RUNNING, f"the scan's consent listener answered HTTP {response.status}")
