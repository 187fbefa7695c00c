"""Generated Gmail mailboxes with a realistic sender distribution, and the history a fake Google keeps of them.

A few senders send most mail (Zipf-like weights), newsletters carry List-Unsubscribe, a few percent are unread,
spam or trash, and one message in a hundred has no Message-ID. With a `ConversationMix` messages join conversations
(Gmail threads) whose members interleave in time, so a thread spans listing pages and may hold Spam or Trash.
"""

from __future__ import annotations

import math
import random
import threading
from dataclasses import dataclass, field, replace
from email.utils import formatdate

from shared.text.normalize import normalize_message_id, parse_sender

FIRST_ID = 0x18C6_0000_0000_0000
START_HISTORY_ID = 100_000


@dataclass(frozen=True, slots=True)
class ConversationMix:
    """Thread sizes: `single_share` of the conversations have one message, the rest average `mean_rest` (>= 2)."""

    single_share: float
    mean_rest: float

    def size(self, rng: random.Random) -> int:
        if rng.random() < self.single_share:
            return 1
        extra = self.mean_rest - 2  # a geometric number of messages beyond two, with this mean
        size = 2
        while extra > 0 and rng.random() < extra / (extra + 1):
            size += 1
        return size


# No conversations: every message is its own thread (the mailbox every older test was written against).
SINGLES = ConversationMix(1.0, 2.0)
# The mix: 55 % single-message conversations, the rest averaging 3.5 messages.
TYPICAL = ConversationMix(0.55, 3.5)
# Mailing-list-heavy: long discussions dominate.
MAILING_LISTS = ConversationMix(0.25, 12.0)
MIXES = {"singles": SINGLES, "typical": TYPICAL, "lists": MAILING_LISTS}
# How many conversations are open (still getting replies) at once: members of one interleave with others'.
OPEN_THREADS = 40


@dataclass(frozen=True, slots=True)
class FakeMessage:
    gmail_id: str
    history_id: int
    label_ids: tuple[str, ...]
    size_estimate: int
    internal_date_ms: int
    headers: tuple[tuple[str, str], ...]
    thread_id: str = ""

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
    mix: ConversationMix = SINGLES
    threads: dict[str, list[str]] = field(default_factory=dict)  # thread id -> member ids, oldest first
    _open: list[tuple[str, int]] = field(default_factory=list)  # (thread id, members still to come)
    _thread_rng: random.Random = field(default_factory=lambda: random.Random(0))
    _next: int = FIRST_ID
    # Senders whose activity waxes and wanes over the mailbox's life (benches: newest mail is then no fair sample).
    drift_span: int = 0  # messages the drift spans (0: no drift, every message drawn from the same weights)
    _phases: list[float] = field(default_factory=list)
    _made: int = 0
    _cum: list[float] = field(default_factory=list)
    _listed: list[str] = field(default_factory=list)
    _listed_key: tuple[bool, int] = (False, -1)

    @classmethod
    def generate(
        cls, count: int, *, seed: int = 7, senders: int = 400, mix: ConversationMix = SINGLES, drift: bool = False
    ) -> Mailbox:
        rng = random.Random(seed)
        people = []
        for rank in range(senders):
            newsletter = rank % 3 == 0
            domain = f"news{rank}.example.com" if newsletter else f"example{rank % 40}.org"
            people.append((f"Sender {rank}", f"user{rank}@{domain}", newsletter))
        weights = [1.0 / (rank + 1) ** 1.1 for rank in range(senders)]
        # Threading draws from its own generator, so a mailbox of singles is the same mailbox as before threads.
        box = cls(rng=rng, senders=people, weights=weights, mix=mix, _thread_rng=random.Random(seed * 7919 + 1))
        if drift:
            box.drift_span = count
            box._phases = [random.Random(seed * 31 + rank).random() for rank in range(senders)]
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
        if self.drift_span:
            name, address, newsletter = rng.choices(self.senders, cum_weights=self._drifted())[0]
        else:
            name, address, newsletter = rng.choices(self.senders, weights=self.weights)[0]
        self._made += 1
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
        message = replace(message, thread_id=self._thread_for(gmail_id))
        self.messages[gmail_id] = message
        self.threads.setdefault(message.thread_id, []).append(gmail_id)
        return message

    def _drifted(self) -> list[float]:
        """Cumulative weights at this point of the mailbox's life: each sender busiest around its own phase."""
        if not self._cum or self._made % 1000 == 0:
            when = self._made / self.drift_span
            total = 0.0
            self._cum = []
            for weight, phase in zip(self.weights, self._phases, strict=True):
                total += weight * (0.25 + 1.5 * math.exp(-(((when - phase) / 0.2) ** 2)))
                self._cum.append(total)
        return self._cum

    def _thread_for(self, gmail_id: str) -> str:
        """A new conversation (its id is its first message's, as in Gmail) or the next member of an open one."""
        if self.mix is SINGLES:
            return gmail_id
        rng = self._thread_rng
        if self._open and (len(self._open) >= OPEN_THREADS or rng.random() < 0.5):
            index = rng.randrange(len(self._open))
            thread_id, left = self._open[index]
            if left <= 1:
                self._open.pop(index)
            else:
                self._open[index] = (thread_id, left - 1)
            return thread_id
        size = self.mix.size(rng)
        if size > 1:
            self._open.append((gmail_id, size - 1))
        return gmail_id

    def thread(self, thread_id: str) -> list[FakeMessage]:
        with self.lock:
            return [self.messages[i] for i in self.threads.get(thread_id, ())]

    def listed(self, *, include_spam_trash: bool) -> list[str]:
        """Ids as `messages.list` gives them, newest first; kept until mail is added (labels never change)."""
        with self.lock:
            key = (include_spam_trash, len(self.order))
            if self._listed_key != key:
                self._listed = [i for i in self.order if include_spam_trash or not self.messages[i].excluded]
                self._listed_key = key
            return self._listed

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
