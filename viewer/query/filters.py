"""The sender filters shared by `/api/senders`, `/api/domains`, `/api/volume` and `/api/export.csv`.

One frozen value built from query parameters, so a page and its export can never disagree. Hidden senders live in
the browser and arrive as repeated `exclude=` parameters (at most 200) or as `hidden=`, the id of a set the page
registered with `POST /api/hidden` (any number); they leave the totals as well as the rows. The value only: the
FastAPI dependency that builds it from a request is `viewer.web.filter_params`.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_EXCLUDED = 200
MAX_QUERY = 200


@dataclass(frozen=True, slots=True)
class SenderFilter:
    q: str = ""
    domain: str | None = None
    min_messages: int = 0
    min_unread_ratio: float = 0.0
    has_unsubscribe: bool | None = None
    exclude: tuple[str, ...] = ()
    # Dates are UTC unix seconds: the last (or first) mail strictly before `*_before`, at or after `*_after`.
    last_before: int | None = None
    last_after: int | None = None
    first_before: int | None = None
    first_after: int | None = None
    min_bytes: int = 0  # all of a sender's mail together
    min_avg_bytes: int = 0  # its mail's average size
    month: str | None = None  # "YYYY-MM" (UTC): senders with counted mail in that month (the chart's bar)

    @property
    def extended(self) -> bool:
        """True when a date, size or month term is set (`viewer.query.sender_queries._extended` matches them)."""
        dates = (self.last_before, self.last_after, self.first_before, self.first_after)
        return any(d is not None for d in dates) or bool(self.min_bytes or self.min_avg_bytes or self.month)

    @property
    def narrows(self) -> bool:
        """True when any filter besides `exclude` is set (then the matching count is not the table's)."""
        return bool(self.q or self.domain is not None or self.min_messages > 1 or self.min_unread_ratio > 0) or (
            self.has_unsubscribe is not None or self.extended
        )

    def key(self) -> tuple[object, ...]:
        dates = (self.last_before, self.last_after, self.first_before, self.first_after)
        sizes = (self.min_bytes, self.min_avg_bytes, self.month)
        return (self.q, self.domain, self.min_messages, self.min_unread_ratio, self.has_unsubscribe, self.exclude) + (
            dates + sizes
        )
