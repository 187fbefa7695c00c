"""`GmailClient` on google-api-python-client: the only module that imports `googleapiclient`.

Translates every foreign failure (HttpError, transport errors, refresh errors) into our errors, here and only here.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import google_auth_httplib2
import httplib2
from google.auth.exceptions import RefreshError, TransportError
from googleapiclient.discovery import build
from googleapiclient.errors import BatchError, HttpError
from googleapiclient.http import BatchHttpRequest

from ingester.gmail.gmail import (
    LIST_PAGE_SIZE,
    MAX_BATCH,
    METADATA_HEADERS,
    BatchResult,
    IdPage,
    MessageMeta,
    Profile,
    ThreadBatchResult,
    ThreadMeta,
)
from shared.errors import ErrorKind, GmailApiError, GmailAuthError

if TYPE_CHECKING:  # the typed stubs' classes; at run time the resources are built from the discovery document
    from googleapiclient._apis.gmail.v1 import GmailResource

    MetadataResource = GmailResource.UsersResource.MessagesResource | GmailResource.UsersResource.ThreadsResource

# The discovery document's batchPath; `new_batch_http_request()` would keep Google's host even when
# `api_endpoint` is overridden, so the batch URI is built from our endpoint instead.
BATCH_PATH = "batch/gmail/v1"
MESSAGE_FIELDS = "id,labelIds,sizeEstimate,internalDate,payload/headers"
THREAD_FIELDS = f"id,messages({MESSAGE_FIELDS})"
_RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
_TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_AFTER = re.compile(r"Retry after (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)")
TESTING_APP_HINT = (
    "the stored Gmail authorisation was revoked or has expired (apps in Google's 'Testing' publishing status "
    "lose their refresh tokens after 7 days); run `gmail-stats scan` again to give consent"
)


def parse_retry_after(message: str) -> float | None:
    """The wall-clock time in Google's "Retry after 2026-11-30T19:30:00.123Z", as Unix seconds."""
    match = _RETRY_AFTER.search(message)
    if match is None:
        return None
    text = match.group(1).rstrip("Z")
    whole, _, fraction = text.partition(".")
    try:
        parsed = time.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return calendar.timegm(parsed) + (float("0." + fraction) if fraction else 0.0)


def error_from_response(status: int, content: bytes | str, *, what: str) -> GmailApiError:
    """Builds the most specific error from Google's JSON error envelope (`{"error": {code, message, errors}}`)."""
    message, reason = "", ""
    try:
        body = json.loads(content)
        error = body.get("error", {}) if isinstance(body, dict) else {}
        if isinstance(error, dict):
            message = str(error.get("message", ""))
            details = error.get("errors") or [{}]
            reason = str(details[0].get("reason", "")) if isinstance(details[0], dict) else ""
        elif isinstance(error, str):  # OAuth-style {"error": "invalid_grant"}
            reason = error
    except (ValueError, TypeError, AttributeError, IndexError):
        pass
    rate = status == 429 or (status == 403 and reason in _RATE_REASONS)
    transient = rate or status in _TRANSIENT_STATUSES
    kind = ErrorKind.RATE_LIMITED if rate else ErrorKind.NOT_FOUND if status == 404 else ErrorKind.GMAIL_API
    text = f"{what}: Gmail answered {status}" + (f" ({reason})" if reason else "") + (f": {message}" if message else "")
    return GmailApiError(
        text, kind=kind, status=status, reason=reason, transient=transient, retry_at=parse_retry_after(message)
    )


def _transport_error(exc: BaseException, *, what: str) -> GmailApiError:
    return GmailApiError(f"{what}: connection to Gmail failed ({exc!r})", kind=ErrorKind.GMAIL_API, transient=True)


def _auth_error(exc: RefreshError) -> GmailAuthError:
    if "policy_enforced" in str(exc):
        return GmailAuthError(
            "Google refuses API access for this account (Error 400: policy_enforced, e.g. Advanced Protection); "
            "use a Takeout export with `gmail-stats import` instead",
            kind=ErrorKind.POLICY_ENFORCED,
        )
    return GmailAuthError(f"{TESTING_APP_HINT} ({exc})", kind=ErrorKind.AUTH_REQUIRED)


def message_from_json(data: dict[str, Any]) -> MessageMeta:
    headers = (data.get("payload") or {}).get("headers") or []
    internal = data.get("internalDate")
    return MessageMeta(
        gmail_id=str(data["id"]),
        label_ids=tuple(str(label) for label in data.get("labelIds") or ()),
        size_estimate=int(data.get("sizeEstimate") or 0),
        internal_date_ms=int(internal) if internal is not None else None,
        headers=tuple((str(h.get("name", "")), str(h.get("value", ""))) for h in headers),
    )


class GoogleGmailClient:
    """One service object and one keep-alive connection (an `httplib2.Http`), reused for every call."""

    def __init__(self, credentials: Any, *, endpoint: str, timeout: float) -> None:
        self._endpoint = endpoint if endpoint.endswith("/") else endpoint + "/"
        self._http = google_auth_httplib2.AuthorizedHttp(credentials, http=httplib2.Http(timeout=timeout))
        self._service = build(
            "gmail",
            "v1",
            http=self._http,
            client_options={"api_endpoint": self._endpoint},
            static_discovery=True,
            cache_discovery=False,
        )
        # Each `users().messages()` call builds a new resource with all its methods: build them once.
        self._users = self._service.users()
        self._messages = self._users.messages()
        self._history = self._users.history()
        self._threads = self._users.threads()

    def close(self) -> None:
        self._service.close()

    def _execute(self, request: Any, *, what: str) -> dict[str, Any]:
        try:
            result: dict[str, Any] = request.execute(num_retries=0)
        except HttpError as exc:
            raise error_from_response(exc.resp.status, exc.content, what=what) from exc
        except RefreshError as exc:
            raise _auth_error(exc) from exc
        except (httplib2.HttpLib2Error, OSError, TransportError, BatchError) as exc:
            raise _transport_error(exc, what=what) from exc
        return result

    def get_profile(self) -> Profile:
        data = self._execute(self._users.getProfile(userId="me"), what="users.getProfile")
        return Profile(
            messages_total=int(data.get("messagesTotal") or 0),
            history_id=str(data["historyId"]),
            email_address=str(data.get("emailAddress") or ""),
        )

    def list_messages(self, *, page_token: str | None) -> IdPage:
        request = self._messages.list(
            userId="me",
            maxResults=LIST_PAGE_SIZE,
            includeSpamTrash=False,
            pageToken=page_token,
            fields="messages(id,threadId),nextPageToken",
        )
        try:
            data = self._execute(request, what="messages.list")
        except GmailApiError as exc:
            if page_token is not None and exc.status == 400:
                raise GmailApiError(str(exc), kind=ErrorKind.BAD_PAGE_TOKEN, status=400) from exc
            raise
        listed = data.get("messages") or ()
        ids = tuple(str(m["id"]) for m in listed)
        threads = tuple(str(m.get("threadId") or m["id"]) for m in listed)
        return IdPage(ids, data.get("nextPageToken"), threads)

    def list_history(self, *, start_history_id: str, page_token: str | None) -> IdPage:
        request = self._history.list(
            userId="me",
            startHistoryId=start_history_id,
            historyTypes="messageAdded",
            maxResults=LIST_PAGE_SIZE,
            pageToken=page_token,
            fields="history/messagesAdded/message(id,threadId),nextPageToken,historyId",
        )
        try:
            data = self._execute(request, what="history.list")
        except GmailApiError as exc:
            if exc.status == 404:  # developers.google.com/gmail/api/guides/sync: start id too old
                raise GmailApiError(str(exc), kind=ErrorKind.HISTORY_EXPIRED, status=404) from exc
            if page_token is not None and exc.status == 400:
                raise GmailApiError(str(exc), kind=ErrorKind.BAD_PAGE_TOKEN, status=400) from exc
            raise
        ids: dict[str, str] = {}
        for record in data.get("history") or ():
            for added in record.get("messagesAdded") or ():
                message = added["message"]
                ids[str(message["id"])] = str(message.get("threadId") or message["id"])
        return IdPage(tuple(ids), data.get("nextPageToken"), tuple(ids.values()))

    def get_messages(self, ids: Sequence[str]) -> BatchResult:
        found, failures = self._batch_metadata(self._messages, ids, fields=MESSAGE_FIELDS, what="messages.get")
        return BatchResult(tuple(message_from_json(data) for data in found), failures)

    def get_threads(self, thread_ids: Sequence[str]) -> ThreadBatchResult:
        found, failures = self._batch_metadata(self._threads, thread_ids, fields=THREAD_FIELDS, what="threads.get")
        threads = tuple(
            ThreadMeta(str(data["id"]), tuple(message_from_json(m) for m in data.get("messages") or ()))
            for data in found
        )
        return ThreadBatchResult(threads, failures)

    def _batch_metadata(
        self, resource: MetadataResource, keys: Sequence[str], *, fields: str, what: str
    ) -> tuple[list[dict[str, Any]], dict[str, GmailApiError]]:
        """One batched `resource.get` (messages or threads, metadata headers only) per distinct key: the answers,
        and a Gmail error per failed key."""
        wanted = list(dict.fromkeys(keys))
        if len(wanted) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} ids per batch")
        found: list[dict[str, Any]] = []
        failures: dict[str, GmailApiError] = {}

        def collect(request_id: str, response: dict[str, Any] | None, exception: Exception | None) -> None:
            if isinstance(exception, HttpError):
                failures[request_id] = error_from_response(
                    exception.resp.status, exception.content, what=f"{what} {request_id}"
                )
            elif exception is not None:
                failures[request_id] = _transport_error(exception, what=f"{what} {request_id}")
            elif response is not None:
                found.append(response)

        batch = BatchHttpRequest(callback=collect, batch_uri=self._endpoint + BATCH_PATH)
        for key in wanted:
            request = resource.get(
                userId="me", id=key, format="metadata", metadataHeaders=list(METADATA_HEADERS), fields=fields
            )
            batch.add(request, request_id=key)
        try:
            batch.execute(http=self._http)
        except HttpError as exc:
            raise error_from_response(exc.resp.status, exc.content, what="batch") from exc
        except RefreshError as exc:
            raise _auth_error(exc) from exc
        except (httplib2.HttpLib2Error, OSError, TransportError, BatchError) as exc:
            raise _transport_error(exc, what="batch") from exc
        return found, failures
