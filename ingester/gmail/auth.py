"""Gmail authorisation: the client-secret file, the token cache (0600), refresh, and the loopback consent flow.

Endpoints come from the client-secret file (`auth_uri`, `token_uri`), never from constants, so a test can point
the real libraries at a fake Google. Scope: `gmail.metadata` only (headers, labels, sizes; never bodies).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httplib2
from google.auth.exceptions import GoogleAuthError, RefreshError
from google.oauth2.credentials import Credentials
from google_auth_httplib2 import Request
from google_auth_oauthlib.flow import Flow
from oauthlib.oauth2.rfc6749.errors import OAuth2Error

from ingester.gmail.consent import PastedLines, wait_for_callback
from ingester.gmail.gmail import ClientFactory, GmailClient
from ingester.gmail.gmail_google import TESTING_APP_HINT, GoogleGmailClient
from shared.accounts import DEFAULT_ACCOUNT
from shared.errors import ErrorKind, GmailApiError, GmailAuthError

SCOPE = "https://www.googleapis.com/auth/gmail.metadata"
HOW_TO_CREDENTIALS = (
    "create a Desktop OAuth client in Google Cloud Console (APIs & Services → Credentials → Create credentials → "
    "OAuth client ID → Desktop app), enable the Gmail API, download its JSON as credentials.json, and pass it "
    "with --credentials or GMAIL_STATS_CREDENTIALS"
)
POLICY_ENFORCED = (
    "Google refuses API access for this account (Error 400: policy_enforced — Advanced Protection or an admin "
    "policy); export your mail from takeout.google.com and use `gmail-stats import` instead"
)


def _shown(path: Path, shown_dir: str | None) -> str:
    """`path` as the person names it: in `shown_dir` (the host's secrets folder under Docker), else as given."""
    return f"{shown_dir.rstrip('/')}/{path.name}" if shown_dir else str(path)


def load_client_config(path: Path, *, shown_dir: str | None = None) -> dict[str, Any]:
    """The client-secret JSON (`installed` or `web`), checked for the keys the flow needs.

    Errors name the file as `_shown` does, and under Docker say where to save it instead of which flag to pass."""
    where = _shown(path, shown_dir)
    how = HOW_TO_CREDENTIALS
    if shown_dir:
        how = how.split(", and pass it")[0].replace("as credentials.json", f"as {where}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GmailAuthError(f"no OAuth client file at {where}: {how}", kind=ErrorKind.MISSING_CREDENTIALS) from None
    except (OSError, ValueError) as exc:
        raise GmailAuthError(f"cannot read {where} ({exc}): {how}", kind=ErrorKind.MISSING_CREDENTIALS) from exc
    section = data.get("installed") or data.get("web") if isinstance(data, dict) else None
    needed = ("client_id", "client_secret", "auth_uri", "token_uri")
    if not isinstance(section, dict) or any(not section.get(key) for key in needed):
        raise GmailAuthError(f"{where} is not an OAuth client-secret file: {how}", kind=ErrorKind.MISSING_CREDENTIALS)
    return {"installed": section}


def load_token_cache(path: Path, config: dict[str, Any]) -> Credentials | None:
    """The cached authorised-user credentials, with `token_uri` taken from the client file.

    `Credentials.from_authorized_user_info` always resets `token_uri` to Google's endpoint, and the copy made by
    `with_token_uri` drops `expiry`, so both are set back here.
    """
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        loaded = Credentials.from_authorized_user_info(info, scopes=[SCOPE])  # type: ignore[no-untyped-call]
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # a corrupt cache is replaced by a new consent, never fatal
        return None
    creds: Credentials = loaded.with_token_uri(config["installed"]["token_uri"])
    creds.expiry = loaded.expiry
    return creds


def save_token_cache(path: Path, creds: Credentials, *, shown_dir: str | None = None) -> None:
    """Writes `Credentials.to_json()` atomically with mode 0600 (it holds a refresh token)."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(creds.to_json())  # type: ignore[no-untyped-call]
        os.replace(tmp, path)
    except OSError as exc:
        fix = "; give the containers' user that folder with `make secrets`" if shown_dir else ""
        message = f"cannot write the token cache {_shown(path, shown_dir)}: {exc.strerror or exc}{fix}"
        raise GmailAuthError(message, kind=ErrorKind.IO) from exc


class GoogleAccess:
    """`GmailAccess` for real Google (or anything speaking its wire protocol at the configured endpoints)."""

    def __init__(
        self,
        *,
        credentials_path: Path,
        tokens_path: Path,
        oauth_bind: str,
        oauth_port: int,
        auth_timeout: float,
        api_endpoint: str,
        http_timeout: float,
        note: Callable[[str], None],
        shown_secrets: str | None = None,
        pasted: PastedLines | None = None,
        on_refused_paste: Callable[[str], None] = lambda line: None,
        unattended: bool = False,
        account: str = DEFAULT_ACCOUNT,
    ) -> None:
        self._account = account  # named by this scan's consent listener, for another account's scan to tell
        # Nobody is there to give consent (a scheduled refresh): a scan needing it fails at once instead.
        self._unattended = unattended
        # A terminal's pasted redirect addresses (None: only the redirect answers, as for unattended runs).
        self._pasted = pasted
        self._on_refused_paste = on_refused_paste
        self._credentials_path = credentials_path
        self._shown_secrets = shown_secrets  # the host's secrets folder under Docker, for the errors' words
        self._tokens_path = tokens_path
        self._bind = oauth_bind
        self._port = oauth_port
        self._timeout = auth_timeout
        self._endpoint = api_endpoint
        self._http_timeout = http_timeout
        self._note = note

    def connect(self, *, on_consent_url: Callable[[str], None], cancel: threading.Event) -> ClientFactory:
        config = load_client_config(self._credentials_path, shown_dir=self._shown_secrets)
        creds = load_token_cache(self._tokens_path, config)
        revoked = False
        if creds is not None and creds.refresh_token and not creds.valid:
            creds = self._refresh(creds)
            revoked = creds is None
        if (creds is None or not creds.refresh_token) and self._unattended:
            raise GmailAuthError(
                "this unattended scan needs consent (no usable token cache); start a scan yourself and allow access",
                kind=ErrorKind.AUTH_REQUIRED,
            )
        if creds is None or not creds.refresh_token:
            try:
                creds = self._consent(config, on_consent_url=on_consent_url, cancel=cancel)
            except GmailAuthError as exc:
                if revoked and exc.kind == ErrorKind.AUTH_REQUIRED:
                    raise GmailAuthError(f"{TESTING_APP_HINT}. {exc}", kind=ErrorKind.AUTH_REQUIRED) from exc
                raise
        save_token_cache(self._tokens_path, creds, shown_dir=self._shown_secrets)
        endpoint, timeout = self._endpoint, self._http_timeout

        def factory() -> GmailClient:
            return GoogleGmailClient(creds, endpoint=endpoint, timeout=timeout)

        return factory

    def _refresh(self, creds: Credentials) -> Credentials | None:
        http = httplib2.Http(timeout=self._http_timeout)
        try:
            creds.refresh(Request(http))  # type: ignore[no-untyped-call]
        except RefreshError as exc:
            if "policy_enforced" in str(exc):
                raise GmailAuthError(POLICY_ENFORCED, kind=ErrorKind.POLICY_ENFORCED) from exc
            self._note(f"{TESTING_APP_HINT}; asking for consent now")
            return None
        except GoogleAuthError as exc:
            raise GmailApiError(f"cannot reach Google's token endpoint: {exc}", transient=True) from exc
        finally:
            http.close()
        return creds

    def _consent(
        self, config: dict[str, Any], *, on_consent_url: Callable[[str], None], cancel: threading.Event
    ) -> Credentials:
        flow = Flow.from_client_config(config, scopes=[SCOPE], redirect_uri=f"http://127.0.0.1:{self._port}/")
        try:
            try:
                url, state = flow.authorization_url(access_type="offline", prompt="consent")
            except OAuth2Error as exc:  # e.g. an http:// auth_uri, which oauthlib refuses
                raise GmailAuthError(
                    f"cannot start Google's consent flow: {exc}", kind=ErrorKind.AUTH_REQUIRED
                ) from exc
            callback = wait_for_callback(
                bind=self._bind,
                port=self._port,
                state=state,
                timeout=self._timeout,
                cancel=cancel,
                account=self._account,
                pasted=self._pasted,
                on_refused=self._on_refused_paste,
                on_listening=lambda: on_consent_url(url),
            )
            if callback.error is not None:
                if callback.error == "policy_enforced":
                    raise GmailAuthError(POLICY_ENFORCED, kind=ErrorKind.POLICY_ENFORCED)
                raise GmailAuthError(
                    f"consent was not given ({callback.error}); run the scan again and allow read-only access to "
                    "message metadata",
                    kind=ErrorKind.AUTH_REQUIRED,
                )
            try:
                flow.fetch_token(code=callback.code)
            except OAuth2Error as exc:
                kind = ErrorKind.POLICY_ENFORCED if ErrorKind.POLICY_ENFORCED in str(exc) else ErrorKind.AUTH_REQUIRED
                text = (
                    POLICY_ENFORCED if kind == ErrorKind.POLICY_ENFORCED else f"Google refused the consent code: {exc}"
                )
                raise GmailAuthError(text, kind=kind) from exc
            except OSError as exc:
                raise GmailApiError(f"cannot reach Google's token endpoint: {exc}", transient=True) from exc
            creds: Credentials = flow.credentials
            return creds
        finally:
            flow.oauth2session.close()
