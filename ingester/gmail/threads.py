"""Which call fetches what: per conversation, one `threads.get` or a `messages.get` per message, by how many of
its listed messages are still unknown. Pure: no I/O; callers filter out what is already known.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ingester.gmail.gmail import COST_MESSAGES_GET, COST_THREADS_GET

# `threads.get` costs 10 units for the whole conversation, `messages.get` 5 per message: from three unknown messages
# on a thread is cheaper. At two both cost 10, and single gets stay (no Spam/Trash members or known messages
# fetched along, finer batches), so a mailbox of one- and two-message conversations runs exactly as before.
THREAD_MIN_UNKNOWN = 3


@dataclass(frozen=True, slots=True)
class ThreadWant:
    """One `threads.get`: the conversation and its listed, still unknown messages it settles."""

    thread_id: str
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FetchPlan:
    threads: tuple[ThreadWant, ...]
    messages: tuple[str, ...]

    @property
    def units(self) -> int:
        return COST_THREADS_GET * len(self.threads) + COST_MESSAGES_GET * len(self.messages)

    def settles(self) -> set[str]:
        """Every listed id this plan fetches (a thread's messages on later pages included)."""
        found = set(self.messages)
        for want in self.threads:
            found.update(want.ids)
        return found


def plan_fetches(due: Iterable[tuple[str, str | None]], ahead: Iterable[tuple[str, str | None]] = ()) -> FetchPlan:
    """Plans the fetches that settle every `due` id, given the unknown ids listed `ahead` (later pages).

    Both hold (Gmail id, thread id or None), unknown ids only. A thread is fetched whole when its unknown messages,
    due and ahead together, number at least `THREAD_MIN_UNKNOWN`; then it settles its ahead ids too. Otherwise its
    due ids are fetched one by one and its ahead ids wait for their own page. Listing order is kept.
    """
    members: dict[str, dict[str, None]] = {}
    order: list[tuple[str, str | None]] = []
    for gmail_id, thread_id in due:
        order.append((gmail_id, thread_id))
        if thread_id is not None:
            members.setdefault(thread_id, {})[gmail_id] = None
    for gmail_id, thread_id in ahead:
        if thread_id is not None and thread_id in members:
            members[thread_id][gmail_id] = None
    threads: dict[str, ThreadWant] = {}
    messages: dict[str, None] = {}
    for gmail_id, thread_id in order:
        group = members.get(thread_id) if thread_id is not None else None
        if thread_id is not None and group is not None and len(group) >= THREAD_MIN_UNKNOWN:
            if thread_id not in threads:
                threads[thread_id] = ThreadWant(thread_id, tuple(group))
        else:
            messages[gmail_id] = None
    return FetchPlan(tuple(threads.values()), tuple(messages))
