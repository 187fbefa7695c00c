"""Gmail API metadata → `MailRecord`, by the same sender rules as the Takeout import. Pure; never raises."""

from __future__ import annotations

import dataclasses

from ingester.gmail.gmail import MessageMeta
from ingester.records import MailRecord
from ingester.records.headers import parse_date
from ingester.records.unsubscribe import parse_unsubscribe
from shared.text.normalize import is_excluded, is_unread, normalize_message_id, parse_sender
from shared.text.storable import SURROGATE_NOTE, storable
from shared.timeutil import plausible_unix


def record_from_meta(
    meta: MessageMeta, *, now: float | None = None, warnings: list[str] | None = None
) -> MailRecord | None:
    """The record to count, or None when the labels exclude it (spam, trash, chat), as the import does."""
    if is_excluded(meta.label_ids, include_spam_trash=False):
        return None
    return metadata_record(meta, now=now, warnings=warnings)


def metadata_record(meta: MessageMeta, *, now: float | None = None, warnings: list[str] | None = None) -> MailRecord:
    """The record of a message whatever its labels (the backfill needs headers of every scanned row).

    What was odd (an undecodable sender, an implausible Date) goes to `warnings`; the message is counted anyway.
    A Date header that is unreadable or implausible (see `plausible_unix`) gives way to Gmail's own date.
    """
    meta, repaired = _storable_meta(meta)
    if repaired and warnings is not None:
        warnings.append(f"message {meta.gmail_id}: {', '.join(repaired)}: {SURROGATE_NOTE}; counted as is")
    raw_sender = meta.header("From") or meta.header("Sender") or meta.header("Return-Path")
    identity = parse_sender(raw_sender) if raw_sender else None
    if identity is not None and identity.problem is not None and warnings is not None:
        warnings.append(f"message {meta.gmail_id}: sender header: {identity.problem}; counted as is")
    raw_id = meta.header("Message-ID")
    message_id = normalize_message_id(raw_id) if raw_id else None
    unsubscribe = parse_unsubscribe(meta.header("List-Unsubscribe"), meta.header("List-Unsubscribe-Post"))
    date_header = meta.header("Date")
    date_unix = plausible_unix(parse_date(date_header), now=now)
    if date_unix is None and meta.internal_date_ms is not None:
        if date_header is not None and warnings is not None:
            warnings.append(f"message {meta.gmail_id}: Date header unreadable or implausible; Gmail's date used")
        date_unix = plausible_unix(meta.internal_date_ms // 1000, now=now)
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


def _storable_meta(meta: MessageMeta) -> tuple[MessageMeta, list[str]]:
    """`meta` with every text storable, and what had to be repaired: JSON may carry lone surrogates (`\\ud800`)."""
    repaired: list[str] = []
    gmail_id, bad = storable(meta.gmail_id)
    if bad:
        repaired.append("id")
    labels = [storable(label) for label in meta.label_ids]
    if any(bad for _, bad in labels):
        repaired.append("labels")
    headers = []
    for name, value in meta.headers:
        (clean_name, bad_name), (clean_value, bad_value) = storable(name), storable(value)
        if bad_name or bad_value:
            repaired.append(f"{clean_name} header")
        headers.append((clean_name, clean_value))
    if not repaired:
        return meta, repaired
    clean = dataclasses.replace(
        meta, gmail_id=gmail_id, label_ids=tuple(label for label, _ in labels), headers=tuple(headers)
    )
    return clean, repaired
