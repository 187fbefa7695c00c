"""The per-sender half of a batch: what it adds to each sender (`SenderDelta`), and the upsert that adds it.

Pure accumulation in memory plus one compiled statement; `ingester.store.store.count_batch` owns the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sqlalchemy import ColumnElement, and_, bindparam, case, func, literal_column, or_
from sqlalchemy.dialects.sqlite import insert

from ingester.records import MailRecord
from ingester.store.compiled import driver_sql
from ingester.store.rollups import DomainDelta, StoredSender, keep_max, keep_min
from shared.schema.models import search_key, senders

SENDER_COLUMNS = (
    "sender",
    "display_name",
    "display_name_unix",
    "mails_sent",
    "first_seen_unix",
    "last_seen_unix",
    "bytes",
    "unread",
    "list_unsubscribe",
    "domain",
    "unsubscribe_web",
    "unsubscribe_mailto",
    "unsubscribe_unix",
    "one_click",
    "search_key",  # kept by this upsert alone (`shared.schema.migration_search` says why)
)


@cache
def upsert_sender(*, lean: bool) -> str:
    """Adds a batch's per-sender delta; the name and unsubscribe targets follow the newest dated message.

    SQLite evaluates every SET expression against the row as it was, so each CASE sees the old name/time. The
    `lean` form leaves `display_name` and `first_seen_unix` out of the SET list: SQLite rewrites the entries of
    every index over an assigned column, and for most senders of a batch neither can change (the caller knows).
    """
    stmt = insert(senders).values({c: bindparam(c) for c in SENDER_COLUMNS})
    s, new = senders.c, stmt.excluded
    never: ColumnElement[int] = literal_column("-1")
    newer_name = and_(
        new.display_name != literal_column("''"),
        or_(
            s.display_name == literal_column("''"),
            func.coalesce(new.display_name_unix, never) >= func.coalesce(s.display_name_unix, never),
        ),
    )
    had_target = or_(s.unsubscribe_web.is_not(None), s.unsubscribe_mailto.is_not(None))
    newer_target = and_(
        or_(new.unsubscribe_web.is_not(None), new.unsubscribe_mailto.is_not(None)),
        or_(~had_target, func.coalesce(new.unsubscribe_unix, never) >= func.coalesce(s.unsubscribe_unix, never)),
    )
    update = {
        "mails_sent": s.mails_sent + new.mails_sent,
        "last_seen_unix": keep_max(s.last_seen_unix, new.last_seen_unix),
        "bytes": s.bytes + new.bytes,
        "unread": s.unread + new.unread,
        "list_unsubscribe": s.list_unsubscribe + new.list_unsubscribe,
        "display_name_unix": case((newer_name, new.display_name_unix), else_=s.display_name_unix),
        **{
            name: case((newer_target, new[name]), else_=s[name])
            for name in ("unsubscribe_web", "unsubscribe_mailto", "unsubscribe_unix", "one_click")
        },
    }
    if not lean:
        update["first_seen_unix"] = keep_min(s.first_seen_unix, new.first_seen_unix)
        update["display_name"] = case((newer_name, new.display_name), else_=s.display_name)
        update["search_key"] = case((newer_name, new.search_key), else_=s.search_key)
    return driver_sql(stmt.on_conflict_do_update(index_elements=[s.sender], set_=update), SENDER_COLUMNS)


def needs_full_upsert(delta: SenderDelta, stored: StoredSender | None) -> bool:
    """True when the batch may change the sender's name or first-seen date (or the sender is new)."""
    if stored is None:
        return True
    if delta.display_name and delta.display_name != stored.display_name:
        return True
    first = delta.first_seen_unix
    return first is not None and (stored.first_seen_unix is None or first < stored.first_seen_unix)


@dataclass(slots=True)
class SenderDelta:
    display_name: str = ""
    display_name_unix: int | None = None
    mails_sent: int = 0
    first_seen_unix: int | None = None
    last_seen_unix: int | None = None
    bytes: int = 0
    unread: int = 0
    list_unsubscribe: int = 0
    unsubscribe_web: str | None = None
    unsubscribe_mailto: str | None = None
    unsubscribe_unix: int | None = None
    one_click: bool = False

    def add(self, record: MailRecord) -> None:
        _, _, _, _, name, date, size, _, unread, lu, web, mailto, one_click = record
        self.mails_sent += 1
        self.bytes += size
        self.unread += unread
        self.list_unsubscribe += lu
        if date is not None:
            first, last = self.first_seen_unix, self.last_seen_unix
            if first is None or date < first:
                self.first_seen_unix = date
            if last is None or date > last:
                self.last_seen_unix = date
        stamp = date if date is not None else -1
        if name and (not self.display_name or stamp >= (self.display_name_unix or -1)):
            self.display_name = name
            self.display_name_unix = date
        if (web or mailto) and (
            (self.unsubscribe_web is None and self.unsubscribe_mailto is None)
            or stamp >= (self.unsubscribe_unix if self.unsubscribe_unix is not None else -1)
        ):
            self.unsubscribe_web = web
            self.unsubscribe_mailto = mailto
            self.unsubscribe_unix = date
            self.one_click = one_click

    def row(self, sender: str, domain: str) -> tuple[object, ...]:
        return (
            sender,
            self.display_name,
            self.display_name_unix,
            self.mails_sent,
            self.first_seen_unix,
            self.last_seen_unix,
            self.bytes,
            self.unread,
            self.list_unsubscribe,
            domain,
            self.unsubscribe_web,
            self.unsubscribe_mailto,
            self.unsubscribe_unix,
            int(self.one_click),
            search_key(sender, self.display_name),
        )


def domain_deltas(
    deltas: dict[str, SenderDelta], stored: dict[str, StoredSender], domain_of: dict[str, str]
) -> dict[str, DomainDelta]:
    by_domain: dict[str, DomainDelta] = {}
    for sender, d in deltas.items():
        x = by_domain.get(domain_of[sender])
        if x is None:
            x = by_domain[domain_of[sender]] = DomainDelta()
        x.senders += sender not in stored
        x.mails_sent += d.mails_sent
        x.bytes += d.bytes
        x.unread += d.unread
        x.list_unsubscribe += d.list_unsubscribe
        for date in (d.first_seen_unix, d.last_seen_unix):
            if date is not None:
                x.first_seen_unix = date if x.first_seen_unix is None else min(x.first_seen_unix, date)
                x.last_seen_unix = date if x.last_seen_unix is None else max(x.last_seen_unix, date)
    return by_domain
