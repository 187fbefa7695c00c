"""Takeout rules: one mbox region becomes a `MailRecord` to count, or a reason not to count it. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from ingester.headers import parse_date, parse_header_block
from ingester.mbox import Region
from ingester.records import MailRecord
from ingester.unsubscribe import NONE, parse_unsubscribe
from shared.normalize import (
    SenderIdentity,
    is_excluded,
    is_unread,
    normalize_message_id,
    parse_labels,
    parse_sender,
)

NOBODY = SenderIdentity(key="", display_name="")


class Skip(StrEnum):
    """Why a region is not counted: `skipped` is lost evidence (makes a run partial), `excluded` is policy."""

    SKIPPED = "skipped"
    EXCLUDED = "excluded"


@dataclass(frozen=True, slots=True)
class LabelFacts:
    joined: str
    spam_or_trash: bool  # excluded by default (Chat included: it is excluded either way)
    chat: bool
    unread: bool


@lru_cache(maxsize=4096)
def label_facts(value: str | None) -> LabelFacts:
    """What an `X-Gmail-Labels` value means for counting; cached, as a mailbox has few distinct label sets."""
    labels = parse_labels(value) if value else ()
    return LabelFacts(
        joined=",".join(labels),
        spam_or_trash=is_excluded(labels, include_spam_trash=False),
        chat=is_excluded(labels, include_spam_trash=True),
        unread=is_unread(labels),
    )


def judge_region(region: Region, *, include_spam_trash: bool) -> MailRecord | Skip:
    """The record to count, or why the region is not counted."""
    if region.postmark is None:
        return Skip.SKIPPED
    fields = parse_header_block(region.header_block)
    if not fields.has_valid_line:
        return Skip.SKIPPED
    labels = label_facts(fields.gmail_labels)
    if labels.chat or (labels.spam_or_trash and not include_spam_trash):  # Chat is never mail
        return Skip.EXCLUDED
    raw_sender = fields.from_ or fields.sender or fields.return_path
    identity = parse_sender(raw_sender) if raw_sender else NOBODY
    message_id = normalize_message_id(fields.message_id) if fields.message_id else None
    if message_id is not None:
        mail_id = "mid:" + message_id
    else:
        mail_id = "hdr:" + hashlib.sha256(region.header_block).hexdigest()
    unsubscribe = (
        NONE
        if fields.list_unsubscribe is None
        else parse_unsubscribe(fields.list_unsubscribe, fields.list_unsubscribe_post)
    )
    date_unix = parse_date(fields.date)
    if date_unix is None:
        date_unix = region.postmark.date_unix
    # Positional `_make`: this runs once per message, and the keyword constructor is several times slower.
    return MailRecord._make(
        (
            mail_id,
            message_id,
            region.postmark.gmail_id,
            identity.key,
            identity.display_name,
            date_unix,
            region.size,
            labels.joined,
            labels.unread,
            fields.list_unsubscribe is not None,
            unsubscribe.web,
            unsubscribe.mailto,
            unsubscribe.one_click,
        )
    )
