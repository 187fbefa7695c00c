"""`MailRecord`: what every ingester hands the store for one message, whatever its source."""

from __future__ import annotations

from typing import NamedTuple

# The key prefix of a Takeout message without Message-ID: its Gmail id (hex) from the separator line.
GMAIL_ID_KEY = "gid:"


class MailRecord(NamedTuple):
    """Metadata of one message; never a subject, body or recipient.

    `mail_id` is the dedupe key (`mid:<Message-ID>`; `gid:<Gmail id>` from a Takeout separator; for other mbox
    files `hdb:<header sha256>.<body sha256>`, or `hdr:<header sha256>` as older imports stored it; a bare Gmail
    id from the API); `gmail_id` is the Gmail API id when known (for an mbox message, from its Takeout postmark).
    A NamedTuple rather than a dataclass because records cross a process
    boundary in bulk, and tuples pickle several times faster.
    """

    mail_id: str
    rfc_message_id: str | None
    gmail_id: str | None
    sender: str
    display_name: str
    date_unix: int | None
    size_bytes: int
    labels: str
    unread: bool
    list_unsubscribe: bool
    # RFC 2369/8058 targets of this message's List-Unsubscribe (validated; None when absent or unusable).
    unsubscribe_web: str | None = None
    unsubscribe_mailto: str | None = None
    one_click: bool = False
