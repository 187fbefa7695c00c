"""Takeout rules: one mbox region becomes a `MailRecord` to count, or a reason not to count it. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from ingester.mbox.regions import Region
from ingester.records import GMAIL_ID_KEY, MailRecord
from ingester.records.headers import parse_date, parse_header_block
from ingester.records.unsubscribe import NONE, parse_unsubscribe
from shared.text.normalize import (
    ADDRESS_PARSE_LIMIT,
    SenderIdentity,
    cached_sender,
    decode_labels,
    is_excluded,
    is_unread,
    normalize_message_id,
    parse_sender,
)
from shared.timeutil import FUTURE_SLACK_SECONDS, plausible_unix

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
    problem: str | None = None  # what was odd about the value (`Labels.problem`); the facts are a best effort


def label_facts(value: str | None) -> LabelFacts:
    """What an `X-Gmail-Labels` value means for counting; cached, as a mailbox has few distinct label sets."""
    if value is not None and len(value) > ADDRESS_PARSE_LIMIT:
        return _label_facts(value)  # a hostile megabyte of labels must not sit in the cache
    return _cached_label_facts(value)


@lru_cache(maxsize=4096)
def _cached_label_facts(value: str | None) -> LabelFacts:
    return _label_facts(value)


def _label_facts(value: str | None) -> LabelFacts:
    decoded = decode_labels(value) if value else None
    labels = decoded.names if decoded is not None else ()
    return LabelFacts(
        joined=",".join(labels),
        spam_or_trash=is_excluded(labels, include_spam_trash=False),
        chat=is_excluded(labels, include_spam_trash=True),
        unread=is_unread(labels),
        problem=decoded.problem if decoded is not None else None,
    )


def judge_region(
    region: Region, *, include_spam_trash: bool, warnings: list[str], now: float | None = None
) -> MailRecord | Skip:
    """The record to count, or why the region is not counted; appends what was odd to `warnings`.

    A date is kept only when plausible (`plausible_unix` against `now`), else the separator's date, else unknown.
    """
    if region.postmark is None or region.header_cut:  # a cut header block cannot be judged: never a guess
        return Skip.SKIPPED
    fields = parse_header_block(region.header_block)
    if not fields.has_valid_line:
        return Skip.SKIPPED
    raw_labels = fields.gmail_labels
    labels = (
        _cached_label_facts(raw_labels)
        if raw_labels is None or len(raw_labels) <= ADDRESS_PARSE_LIMIT
        else _label_facts(raw_labels)
    )
    if labels.problem is not None:
        warnings.append(f"bytes {region.start}-{region.end}: X-Gmail-Labels header: {labels.problem}; read as is")
    if labels.chat or (labels.spam_or_trash and not include_spam_trash):  # Chat is never mail
        return Skip.EXCLUDED
    if fields.oversized:
        warnings.append(f"bytes {region.start}-{region.end}: a header over 64 KiB; only its two ends were read")
    raw_sender = fields.from_ or fields.sender or fields.return_path
    if raw_sender is None:
        identity = NOBODY
    else:  # the cached path inline: this runs once per message
        identity = cached_sender(raw_sender) if len(raw_sender) <= ADDRESS_PARSE_LIMIT else parse_sender(raw_sender)
    if identity.problem is not None:
        warnings.append(f"bytes {region.start}-{region.end}: sender header: {identity.problem}; counted as is")
    message_id = normalize_message_id(fields.message_id) if fields.message_id else None
    gmail_id = region.postmark.gmail_id
    if message_id is not None:
        mail_id = "mid:" + message_id
    elif gmail_id is not None:
        mail_id = GMAIL_ID_KEY + gmail_id  # Takeout's separator carries the message's Gmail id
    else:
        mail_id = "hdr:" + hashlib.sha256(region.header_block).hexdigest()
    if fields.content_length is not None and not region.length_framed:
        note = _length_note(region, fields.content_length)
        if note is not None:
            warnings.append(f"bytes {region.start}-{region.end}: {note}")
    unsubscribe = (
        NONE
        if fields.list_unsubscribe is None
        else parse_unsubscribe(fields.list_unsubscribe, fields.list_unsubscribe_post)
    )
    date_unix = parse_date(fields.date)  # None before 1971
    if date_unix is not None and now is not None and date_unix > now + FUTURE_SLACK_SECONDS:
        date_unix = None
    if date_unix is None:
        if fields.date is not None:
            warnings.append(f"bytes {region.start}-{region.end}: Date header unreadable or implausible")
        date_unix = plausible_unix(region.postmark.date_unix, now=now)
        note = region.postmark.zone_note if date_unix is not None else None
        if note is not None:
            warnings.append(f"bytes {region.start}-{region.end}: {note}")
    # Positional `_make`: this runs once per message, and the keyword constructor is several times slower.
    return MailRecord._make(
        (
            mail_id,
            message_id,
            gmail_id,
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


def _length_note(region: Region, stated: str) -> str | None:
    """What to warn when a Content-Length (mboxcl2) disagrees with the body the separator lines frame, or None.

    Asked only in a file that is not Content-Length framed throughout (`ingester.mbox.lengths`), where framing
    follows separator lines; a body longer than stated is fine up to the blank line (and its CR) before the next
    separator. A shorter one means a separator-shaped line inside the body (an embedded message, perhaps counted
    on its own) or a changed file: the person should know.
    """
    text = stated.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 18 or region.postmark is None:  # "²" is a digit
        return None
    body = region.size - len(region.postmark.line) - 1 - len(region.header_block)
    body -= 2 if region.header_block.endswith(b"\r\n") else 1  # the blank line ending the header block
    if 0 <= body - int(text) <= 2:
        return None
    return (
        f"Content-Length says {int(text):,} bytes but separator lines frame a body of {max(body, 0):,}; "
        "counted as framed (a separator-like line inside it may start another counted message)"
    )
