"""The Gmail seam: what the scan needs from Gmail, as a `Protocol` plus the frozen values it returns.

No HTTP here. `gmail_google` implements it with google-api-python-client; tests may implement it directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ingester.runs.lifecycle import RunCancelled
from shared.errors import GmailApiError

# Gmail's published quota costs per method (developers.google.com/gmail/api/reference/quota).
COST_GET_PROFILE = 1
COST_MESSAGES_LIST = 5
COST_MESSAGES_GET = 5
# One call for a whole conversation, whatever its length: cheaper per message from three unknown messages on.
COST_THREADS_GET = 10
COST_HISTORY_LIST = 2
# Google's advice for batches; 100-call batches draw "Too many concurrent requests for user".
MAX_BATCH = 50
LIST_PAGE_SIZE = 500
METADATA_HEADERS = (
    "From",
    "Sender",
    "Return-Path",
    "Message-ID",
    "Date",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
)


@dataclass(frozen=True, slots=True)
class Profile:
    messages_total: int
    history_id: str
    email_address: str = ""  # the mailbox's address: names the account and its Gmail links (`authuser=`)


@dataclass(frozen=True, slots=True)
class IdPage:
    """One page of message ids (from `messages.list` or `history.list`) and, position by position, their threads.

    `thread_ids` is empty when the lister did not say (a thread-less page is fetched message by message).
    """

    ids: tuple[str, ...]
    next_page_token: str | None
    thread_ids: tuple[str, ...] = ()

    def pairs(self) -> list[tuple[str, str | None]]:
        """(Gmail id, thread id or None) in listing order."""
        if len(self.thread_ids) != len(self.ids):
            return [(i, None) for i in self.ids]
        return list(zip(self.ids, self.thread_ids, strict=True))


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """The metadata we keep of one message: never a subject, body or recipient."""

    gmail_id: str
    label_ids: tuple[str, ...]
    size_estimate: int
    internal_date_ms: int | None
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The first non-empty value of header `name` (case-insensitive), like the Takeout rules."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted and value.strip():
                return value.strip()
        return None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one batch of `messages.get` calls gave: messages, and a Gmail error per id that failed."""

    messages: tuple[MessageMeta, ...]
    failures: Mapping[str, GmailApiError] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ThreadMeta:
    """One conversation as `threads.get` (metadata) returns it: every message, Spam and Trash included."""

    thread_id: str
    messages: tuple[MessageMeta, ...]


@dataclass(frozen=True, slots=True)
class ThreadBatchResult:
    """What one batch of `threads.get` calls gave: threads, and a Gmail error per thread id that failed."""

    threads: tuple[ThreadMeta, ...]
    failures: Mapping[str, GmailApiError] = field(default_factory=dict)


class GmailClient(Protocol):
    """One worker's connection to one mailbox; not shared between threads."""

    def get_profile(self) -> Profile: ...

    def list_messages(self, *, page_token: str | None) -> IdPage:
        """One page of `messages.list`, spam and trash excluded; raises `GmailApiError(kind="bad_page_token")`."""
        ...

    def list_history(self, *, start_history_id: str, page_token: str | None) -> IdPage:
        """Ids of messages added since `start_history_id`; raises `GmailApiError(kind="history_expired")`."""
        ...

    def get_messages(self, ids: Sequence[str]) -> BatchResult:
        """`messages.get` (metadata) for at most `MAX_BATCH` ids in one batch request."""
        ...

    def get_threads(self, thread_ids: Sequence[str]) -> ThreadBatchResult:
        """`threads.get` (metadata, the same headers) for at most `MAX_BATCH` thread ids in one batch request."""
        ...

    def close(self) -> None: ...


ClientFactory = Callable[[], GmailClient]


class GmailAccess(Protocol):
    """Authorises (maybe through the consent flow) and hands out per-worker clients."""

    def connect(self, *, on_consent_url: Callable[[str], None], cancel: threading.Event) -> ClientFactory:
        """Raises `GmailAuthError`, or `AuthCancelled` when `cancel` is set while waiting for consent."""
        ...


class AuthCancelled(RunCancelled):
    """The consent wait was cancelled by a signal (not an error: the run ends `cancelled`)."""
