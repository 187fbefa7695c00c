"""Takeout mbox files made from a fake mailbox's messages, so both ingesters can see the same mail."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tests.fakes.mailbox import FakeMessage
from tests.support.factories import region

_LABELS = {"INBOX": "Inbox", "UNREAD": "Unread", "SPAM": "Spam", "TRASH": "Trash", "CHAT": "Chat"}


def takeout_region(message: FakeMessage, *, postmark_matches: bool) -> bytes:
    """One mbox message; its postmark carries the Gmail id (as Takeout appears to) only when `postmark_matches`."""
    number = (
        int(message.gmail_id, 16) if postmark_matches else 7_000_000_000_000_000_000 + int(message.gmail_id, 16) % 10**9
    )
    labels = ",".join(_LABELS.get(label, label.title()) for label in message.label_ids)
    headers = [("X-Gmail-Labels", labels), *message.headers, ("Subject", "hello")]
    return region(gmail_id=number, headers=headers)


def write_takeout(path: Path, messages: Iterable[tuple[FakeMessage, bool]]) -> None:
    with path.open("wb") as handle:
        for message, matches in messages:
            handle.write(takeout_region(message, postmark_matches=matches))
