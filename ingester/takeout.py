"""Takeout rules: one mbox region becomes a `MailRecord` to count, or a reason not to count it. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from ingester.headers import parse_date, parse_header_block
from ingester.mbox import Region
from ingester.records import MailRecord
from shared.normalize import (
    is_excluded,
    is_unread,
    normalize_message_id,
    parse_labels,
    parse_sender,
)


class Skip(StrEnum):
    """Why a region is not counted: `skipped` is lost evidence (makes a run partial), `excluded` is policy."""

    SKIPPED = "skipped"
    EXCLUDED = "excluded"


@dataclass(frozen=True, slots=True)
class Verdict:
    record: MailRecord | None
    skip: Skip | None


def judge_region(region: Region, *, include_spam_trash: bool) -> Verdict:
    if region.postmark is None:
        return Verdict(None, Skip.SKIPPED)
    fields = parse_header_block(region.header_block)
    if not fields.has_valid_line:
        return Verdict(None, Skip.SKIPPED)
    labels = parse_labels(fields.gmail_labels) if fields.gmail_labels else ()
    if labels and is_excluded(labels, include_spam_trash=include_spam_trash):
        return Verdict(None, Skip.EXCLUDED)
    raw_sender = fields.from_ or fields.sender or fields.return_path
    identity = parse_sender(raw_sender) if raw_sender else None
    message_id = normalize_message_id(fields.message_id) if fields.message_id else None
    if message_id is not None:
        mail_id = "mid:" + message_id
    else:
        mail_id = "hdr:" + hashlib.sha256(region.header_block).hexdigest()
    date_unix = parse_date(fields.date)
    record = MailRecord(
        mail_id=mail_id,
        rfc_message_id=message_id,
        gmail_id=region.postmark.gmail_id,
        sender=identity.key if identity is not None else "",
        display_name=identity.display_name if identity is not None else "",
        date_unix=date_unix if date_unix is not None else region.postmark.date_unix,
        size_bytes=region.size,
        labels=",".join(labels),
        unread=is_unread(labels),
        list_unsubscribe=fields.list_unsubscribe is not None,
    )
    return Verdict(record, None)
