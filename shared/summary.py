"""The per-sender summary document: `gmail-stats export` writes it and the viewer serves it at `/api/summary`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, select

from shared.schema.models import senders
from shared.sender_list import SenderChoice, chosen

SENDER_COLUMNS = (
    "sender",
    "display_name",
    "mails_sent",
    "first_seen_unix",
    "last_seen_unix",
    "bytes",
    "unread",
    "list_unsubscribe",
)


@dataclass(frozen=True, slots=True)
class SenderRow:
    sender: str
    display_name: str
    mails_sent: int
    first_seen_unix: int | None
    last_seen_unix: int | None
    bytes: int
    unread: int
    list_unsubscribe: int


def all_senders(conn: Connection, choice: SenderChoice | None = None) -> list[SenderRow]:
    """Every sender (or those `choice` keeps), most mail first, ties by sender key."""
    t = senders
    stmt = select(*(t.c[name] for name in SENDER_COLUMNS)).order_by(t.c.mails_sent.desc(), t.c.sender.asc())
    if choice is not None:
        stmt = stmt.where(*chosen(choice))
    return [SenderRow(*row) for row in conn.execute(stmt)]


def summary_document(senders: list[SenderRow], *, now: float) -> dict[str, Any]:
    return {
        "total_messages": sum(s.mails_sent for s in senders),
        "senders": [asdict(s) for s in senders],
        "generated_at_unix": int(now),
    }
