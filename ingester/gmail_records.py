"""Gmail API metadata → `MailRecord`, by the same sender rules as the Takeout import. Pure."""

from __future__ import annotations

from ingester.gmail import MessageMeta
from ingester.headers import parse_date
from ingester.records import MailRecord
from ingester.unsubscribe import parse_unsubscribe
from shared.normalize import is_excluded, is_unread, normalize_message_id, parse_sender


def record_from_meta(meta: MessageMeta) -> MailRecord | None:
    """The record to count, or None when the labels exclude it (spam, trash, chat), as the import does."""
    if is_excluded(meta.label_ids, include_spam_trash=False):
        return None
    return metadata_record(meta)


def metadata_record(meta: MessageMeta) -> MailRecord:
    """The record of a message whatever its labels (the backfill needs headers of every scanned row)."""
    raw_sender = meta.header("From") or meta.header("Sender") or meta.header("Return-Path")
    identity = parse_sender(raw_sender) if raw_sender else None
    raw_id = meta.header("Message-ID")
    message_id = normalize_message_id(raw_id) if raw_id else None
    unsubscribe = parse_unsubscribe(meta.header("List-Unsubscribe"), meta.header("List-Unsubscribe-Post"))
    date_unix = parse_date(meta.header("Date"))
    if date_unix is None and meta.internal_date_ms is not None:
        date_unix = meta.internal_date_ms // 1000
    return MailRecord(
        mail_id=meta.gmail_id,
        rfc_message_id=message_id,
        gmail_id=meta.gmail_id,
        sender=identity.key if identity is not None else "",
        display_name=identity.display_name if identity is not None else "",
        date_unix=date_unix,
        size_bytes=meta.size_estimate,
        labels=",".join(meta.label_ids),
        unread=is_unread(meta.label_ids),
        list_unsubscribe=meta.header("List-Unsubscribe") is not None,
        unsubscribe_web=unsubscribe.web,
        unsubscribe_mailto=unsubscribe.mailto,
        one_click=unsubscribe.one_click,
    )
