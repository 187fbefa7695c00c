"""The sender filters shared by `/api/senders`, `/api/domains`, `/api/volume` and `/api/export.csv`.

One frozen value built from query parameters, so a page and its export can never disagree. Hidden senders live in
the browser and arrive as repeated `exclude=` parameters (at most 200) or as `hidden=`, the id of a set the page
registered with `POST /api/hidden` (any number); they leave the totals as well as the rows. The value only: the
FastAPI dependency that builds it from a request is `viewer.web.deps`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.sender_list import SenderChoice

MAX_EXCLUDED = 200
MAX_QUERY = 200
_NO_CHOICE = SenderChoice()


@dataclass(frozen=True, slots=True)
class SenderFilter:
    q: str = ""
    domain: str | None = None
    min_messages: int = 0
    min_unread_ratio: float = 0.0
    has_unsubscribe: bool | None = None
    exclude: tuple[str, ...] = ()
    # The date and size terms, as `gmail-stats export` takes them (`shared.sender_list.chosen` is their SQL).
    choice: SenderChoice = _NO_CHOICE
    month: str | None = None  # "YYYY-MM" (UTC): senders with counted mail in that month (the chart's bar)

    @property
    def extended(self) -> bool:
        """True when a date, size or month term is set (`viewer.query.sender_queries._extended` matches them)."""
        return self.choice != _NO_CHOICE or self.month is not None

    @property
    def narrows(self) -> bool:
        """True when any filter besides `exclude` is set (then the matching count is not the table's)."""
        return bool(self.q or self.domain is not None or self.min_messages > 1 or self.min_unread_ratio > 0) or (
            self.has_unsubscribe is not None or self.extended
        )

    def key(self) -> tuple[object, ...]:
        shown = (self.q, self.domain, self.min_messages, self.min_unread_ratio, self.has_unsubscribe)
        return (*shown, self.exclude, self.choice, self.month)
