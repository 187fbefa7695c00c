"""Generated Gmail mailboxes with a realistic sender distribution, and the history a fake Google keeps of them.

A few senders send most mail (Zipf-like weights), newsletters carry List-Unsubscribe, a few percent are unread,
spam or trash, and one message in a hundred has no Message-ID.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from email.utils import formatdate

from shared.normalize import normalize_message_id, parse_sender

FIRST_ID = 0x18C6_0000_0000_0000
START_HISTORY_ID = 100_000


@dataclass(frozen=True, slots=True)
class FakeMessage:
    gmail_id: str
    history_id: int
    label_ids: tuple[str, ...]
    size_estimate: int
    internal_date_ms: int
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    @property
    def excluded(self) -> bool:
        return bool({"SPAM", "TRASH", "CHAT"} & set(self.label_ids))

    @property
    def sender_key(self) -> str:
        raw = self.header("From") or self.header("Sender") or self.header("Return-Path")
        return parse_sender(raw).key if raw else ""

    @property
    def message_id(self) -> str | None:
        raw = self.header("Message-ID")
        return normalize_message_id(raw) if raw else None


@dataclass(slots=True)
class Mailbox:
    """Messages newest first, plus `messageAdded` history; thread-safe for a server's handler threads."""

    rng: random.Random
    senders: list[tuple[str, str, bool]]
    weights: list[float]
    messages: dict[str, FakeMessage] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # newest first
    history_id: int = START_HISTORY_ID
    history_floor: int = START_HISTORY_ID
    lock: threading.RLock = field(default_factory=threading.RLock)
    _next: int = FIRST_ID

    @classmethod
    def generate(cls, count: int, *, seed: int = 7, senders: int = 400) -> Mailbox:
        rng = random.Random(seed)
        people = []
        for rank in range(senders):
            newsletter = rank % 3 == 0
            domain = f"news{rank}.example.com" if newsletter else f"example{rank % 40}.org"
            people.append((f"Sender {rank}", f"user{rank}@{domain}", newsletter))
        weights = [1.0 / (rank + 1) ** 1.1 for rank in range(senders)]
        box = cls(rng=rng, senders=people, weights=weights)
        box.add(count)
        box.history_floor = box.history_id
        return box

    def add(self, count: int, *, labels: tuple[str, ...] | None = None) -> list[FakeMessage]:
        """Adds `count` new messages (with history records) and returns them."""
        added = []
        with self.lock:
            for _ in range(count):
                added.append(self._new_message(labels))
            self.order[:0] = [m.gmail_id for m in reversed(added)]
        return added

    def _new_message(self, labels: tuple[str, ...] | None) -> FakeMessage:
        rng = self.rng
        name, address, newsletter = rng.choices(self.senders, weights=self.weights)[0]
        self._next += rng.randint(1, 5000)
        self.history_id += 1
        gmail_id = f"{self._next:x}"
        date = 1_600_000_000 + (self._next - FIRST_ID) // 100_000
        if labels is None:
            roll = rng.random()
            labels = ("SPAM",) if roll < 0.02 else ("TRASH",) if roll < 0.04 else ("INBOX",)
            if rng.random() < 0.3:
                labels += ("UNREAD",)
            if newsletter:
                labels += ("CATEGORY_PROMOTIONS",)
        headers = [("From", f'"{name}" <{address}>'), ("Date", formatdate(date))]
        if rng.random() >= 0.01:
            headers.append(("Message-ID", f"<{gmail_id}.{rng.getrandbits(32):08x}@{address.split('@')[1]}>"))
        if newsletter:
            host = address.split("@")[1]
            # Half the newsletters also offer RFC 8058 one-click (by id parity: no extra random draws).
            if self._next % 2:
                headers.append(("List-Unsubscribe", f"<https://{host}/u/{gmail_id}>, <mailto:unsubscribe@{host}>"))
                headers.append(("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"))
            else:
                headers.append(("List-Unsubscribe", f"<mailto:unsubscribe@{host}>"))
        message = FakeMessage(
            gmail_id=gmail_id,
            history_id=self.history_id,
            label_ids=labels,
            size_estimate=rng.randint(2_000, 80_000),
            internal_date_ms=date * 1000,
            headers=tuple(headers),
        )
        self.messages[gmail_id] = message
        return message

    def listed(self, *, include_spam_trash: bool) -> list[str]:
        with self.lock:
            return [i for i in self.order if include_spam_trash or not self.messages[i].excluded]

    def added_since(self, history_id: int) -> list[FakeMessage]:
        with self.lock:
            found = [m for m in self.messages.values() if m.history_id > history_id]
        return sorted(found, key=lambda m: m.history_id)

    def expected_counts(self) -> dict[str, int]:
        """Per-sender counts an exact scan of the current mailbox must produce (spam/trash/chat excluded)."""
        counts: dict[str, int] = {}
        with self.lock:
            for gmail_id in self.order:
                message = self.messages[gmail_id]
                if not message.excluded:
                    counts[message.sender_key] = counts.get(message.sender_key, 0) + 1
        return counts
