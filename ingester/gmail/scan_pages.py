"""Walks a listing (messages.list or history.list pages) in order, settling each page with the next ones in view.

Looking ahead lets a conversation whose messages span pages be fetched whole once; only the listing's head page
is ever "done", so a resume token never skips an unsettled id. Does not count or commit: the `Settler` does.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable

from ingester.gmail.fetcher import FetchCancelled
from ingester.gmail.gmail import IdPage
from ingester.gmail.scan_settle import Settler

# Pages listed beyond the one being settled: 2,000 ids of look-ahead for 20 quota units, about one more second of
# listing before the first fetch. Long conversations that reach further are still fetched whole once three of
# their unknown messages are in view, and their members on later pages are then known.
LOOKAHEAD_PAGES = 4


def walk_pages(
    first: IdPage,
    next_page: Callable[[str], IdPage],
    *,
    settler: Settler,
    cancel: threading.Event,
    page_done: Callable[[IdPage], None],
    lookahead: int = LOOKAHEAD_PAGES,
) -> None:
    """Settles every page from `first` on, calling `page_done(page)` in listing order; raises `FetchCancelled`."""
    window = deque([first])

    def extend() -> None:
        token = window[-1].next_page_token
        if token is not None and not cancel.is_set():
            window.append(next_page(token))

    while len(window) <= lookahead and window[-1].next_page_token is not None and not cancel.is_set():
        extend()
    while window:
        head = window[0]
        ahead = [pair for page in itertools.islice(window, 1, None) for pair in page.pairs()]
        submitted = settler.submit(head.pairs(), ahead)
        if len(window) <= lookahead:
            extend()  # overlaps with the workers' fetches
        if not settler.collect(submitted):
            raise FetchCancelled()
        window.popleft()
        settler.passed(head.ids)
        page_done(head)
        if not window and head.next_page_token is not None:  # the listing stopped for a cancel
            raise FetchCancelled()
