"""Reads a first scan's random sample (`scan_sample`, `scan_listed`) into the estimator's sums. Read-only SQL.

The sample is every listed thread whose slot is below `scan_sample.threads_done`; a thread's messages are the
counted rows of its listed ids, whether a scan counted them (`mail_id`) or a Takeout import did (`gmail_id`), so
mail known before the scan is sampled like the rest.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection

from shared.sampling.estimator import GroupSums, SampleSums

Grouping = Literal["sender", "domain"]


@dataclass(frozen=True, slots=True)
class SampleState:
    """Where the first scan in random order stands, and the state of its run."""

    run_id: int
    listed: bool
    ids_total: int
    threads_total: int
    threads_done: int
    ids_done: int
    started_at_unix: int
    run_state: str | None
    updated_at_unix: int | None

    @property
    def fraction(self) -> float:
        """The share of listed messages in the sample (0 while listing)."""
        return self.ids_done / self.ids_total if self.listed and self.ids_total else 0.0


def read_sample_state(conn: Connection) -> SampleState | None:
    """The sample of the first scan in random order, or None when there is none (never, or it completed)."""
    row = conn.exec_driver_sql(
        "SELECT s.run_id, s.listed, s.ids_total, s.threads_total, s.threads_done, s.started_at_unix, r.state,"
        " r.updated_at_unix FROM scan_sample s LEFT JOIN ingest_runs r ON r.run_id = s.run_id"
    ).first()
    if row is None:
        return None
    done = int(row[4])
    ids_done = conn.exec_driver_sql("SELECT count(*) FROM scan_listed WHERE slot < ?", (done,)).scalar_one()
    return SampleState(
        run_id=int(row[0]),
        listed=bool(row[1]),
        ids_total=int(row[2]),
        threads_total=int(row[3]),
        threads_done=done,
        ids_done=int(ids_done),
        started_at_unix=int(row[5]),
        run_state=None if row[6] is None else str(row[6]),
        updated_at_unix=None if row[7] is None else int(row[7]),
    )


def _rows_sql(grouping: Grouping) -> str:
    """Counted messages, bytes and unread per (group, sampled slot); each listed id matched once."""
    key = "m.sender" if grouping == "sender" else "coalesce(s.domain, '')"
    joined = "" if grouping == "sender" else " LEFT JOIN senders s ON s.sender = m.sender"
    parts = [
        f"SELECT {key} AS k, l.slot AS slot, m.size_bytes AS size, m.unread AS unread"
        f" FROM scan_listed l JOIN seen_mails m ON {on}{joined} WHERE l.slot < ? AND m.counted = 1"
        for on in ("m.mail_id = l.gmail_id", "m.gmail_id = l.gmail_id AND m.mail_id != l.gmail_id")
    ]
    return f"SELECT k, slot, count(*), sum(size), sum(unread) FROM ({' UNION ALL '.join(parts)}) GROUP BY k, slot"


def read_sample(conn: Connection, state: SampleState, *, grouping: Grouping) -> tuple[SampleSums, list[GroupSums]]:
    """The sample's sums overall and per sender or domain (one pass over the sampled messages)."""
    done = state.threads_done if state.listed else 0
    rows = conn.exec_driver_sql(_rows_sql(grouping), (done, done)).all()
    per_thread: dict[int, int] = defaultdict(int)
    for _, slot, count, _, _ in rows:
        per_thread[int(slot)] += int(count)
    sums: dict[str, list[float]] = {}
    for key, slot, count, size, unread in rows:
        y, b, u, x = float(count), float(size or 0), float(unread or 0), float(per_thread[int(slot)])
        acc = sums.setdefault(str(key), [0.0] * 9)
        for index, value in enumerate((1.0, y, y * y, b, b * b, u, u * u, u * y, x * y)):
            acc[index] += value
    x_total = float(sum(per_thread.values()))
    x_squares = float(sum(v * v for v in per_thread.values()))
    sample = SampleSums(state.threads_total, done, x_total, x_squares)
    groups = [GroupSums(key, int(a[0]), *a[1:]) for key, a in sums.items()]
    return sample, groups
