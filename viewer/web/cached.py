"""Serving a `ResponseCache` from the event loop: a hit answers at once, a miss reads the database in the threadpool."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from starlette.concurrency import run_in_threadpool

from viewer.query.cache import ResponseCache


async def answer(cache: ResponseCache, key: Hashable, version: Hashable, compute: Callable[[], Any]) -> Any:
    """A fresh cached answer straight from the event loop; a miss computes (reads the database) in the threadpool."""
    found = cache.peek(key, version)
    if found is None:
        found = await run_in_threadpool(cache.get, key, version, compute)
    return found
