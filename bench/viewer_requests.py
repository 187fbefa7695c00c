"""The viewer bench's request mixes: timed single requests (sorts, searches, filter presets, find terms, domains,
hidden senders, the volume series, the CSV exports), each varied so that it misses the viewer's cache.

Timing only, against a running viewer at `base`; bench_viewer.py starts it and prints the table.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import httpx

from bench.viewer_db import SENDERS, address


def single(base: str, url: str, repeat: int = 20, vary: int = 0) -> list[float]:
    """Sequential requests, timed with this process's garbage collector paused (as `timeit` does): a collection
    here took up to 85 ms and would be counted as the viewer's time."""
    samples = []
    with httpx.Client(base_url=base, timeout=60) as client:
        gc.collect()
        gc.disable()
        try:
            for i in range(repeat):
                t0 = time.perf_counter()
                assert client.get(url.format(vary + i * 50)).status_code == 200
                samples.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return samples


def _firsts(base: str, texts: list[str]) -> list[float]:
    """One request per search text: each is a first, uncounted request of its search."""
    return [single(base, f"/api/senders?limit=50&q={text}", repeat=1)[0] for text in texts]


def _register_hidden(base: str, senders: list[str]) -> str:
    """What the page does with its hidden senders: one `POST /api/hidden`, then `hidden=<id>` on every read."""
    with httpx.Client(base_url=base, timeout=60) as client:
        token = client.get("/api/status").json()["csrf_token"]
        headers = {"X-Gmail-Stats-Csrf": token}
        return str(client.post("/api/hidden", json={"senders": senders}, headers=headers).json()["hidden"])


def _thousand(start: int) -> list[str]:
    """1,000 hidden senders spread over the mailbox (every 200th from `start`, over 150 domains), the busiest first."""
    return [address(k) for k in range(start, SENDERS, SENDERS // 1000)]


def _hidden_sets(base: str) -> dict[str, list[float]]:
    """1,000 hidden senders: pages of one set; a Hide click (the set plus one more sender each time, as the page
    sends it); and new sets of 1,000 that share nothing with any set before (a viewer just restarted)."""
    extra: dict[str, list[float]] = {}
    hidden = f"&hidden={_register_hidden(base, _thousand(0))}"
    extra["page, 1,000 hidden senders"] = single(base, "/api/senders?limit=50&offset={}" + hidden, 10)
    extra["page sorted by bytes, 1,000 hidden"] = single(
        base, "/api/senders?limit=50&sort=bytes&offset={}" + hidden, 10
    )
    extra["domains, 1,000 hidden senders"] = single(base, "/api/domains?limit=50&offset={}" + hidden, 10)
    routes = {"page": "/api/senders?limit=50", "domains": "/api/domains?limit=50", "volume": "/api/volume?"}
    news: list[tuple[str, Callable[[int], str]]] = []
    for label, route in routes.items():
        shift = len(label)  # each route its own senders, so none reuses another's lookups
        extra[f"{label}, a Hide click (1,000 hidden + one more)"] = _each(base, _one_more(route, shift, hidden))
        news.append((f"{label}, a new set of 1,000 (none known)", _fresh_set(base, route, shift)))
    for label, fresh in news:  # last: each registers sets, and the viewer holds only the last 8
        extra[label] = _each(base, fresh)
    return extra


def _one_more(route: str, shift: int, hidden: str) -> Callable[[int], str]:
    """A different existing sender each time, hidden on top of the 1,000 (`exclude=` adds to `hidden=`)."""
    return lambda i: f"{route}&exclude={address(50 + 1000 * i + shift)}{hidden}"


def _fresh_set(base: str, route: str, shift: int) -> Callable[[int], str]:
    """A set sharing no sender with any other (every 200th sender from a start of its own), registered."""
    return lambda i: f"{route}&hidden={_register_hidden(base, _thousand(1 + 20 * i + shift))}"


def _each(base: str, make_url: Callable[[int], str], count: int = 10) -> list[float]:
    """`count` timed requests on one connection, each to the URL `make_url(i)` returns (made untimed)."""
    samples = []
    with httpx.Client(base_url=base, timeout=60) as client:
        for i in range(count):
            url = make_url(i)
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                response = client.get(url)
                assert response.status_code == 200, (url[:120], response.text[:300])
                samples.append(time.perf_counter() - t0)
            finally:
                gc.enable()
    return samples


def request_mixes(base: str, parts: set[str]) -> dict[str, list[float]]:
    """Distinct queries (a varying offset or query), so each one misses the cache and measures the SQL.

    A search of one or two characters cannot vary its text: its later pages reuse the count of its first (kept
    for the generation), so its p95 (the 10th of 10) is the first, uncounted request."""
    extra: dict[str, list[float]] = {}
    if "sorts" in parts:
        extra["page at offset 100,000"] = single(base, "/api/senders?limit=50&offset={}", vary=100_000)
        for sort in ("mails_sent", "sender", "name", "last_seen", "first_seen", "bytes", "unread_ratio"):
            for order in ("desc", "asc"):
                url = f"/api/senders?limit=50&sort={sort}&order={order}&offset={{}}"
                extra[f"page sorted by {sort} {order}"] = single(base, url, repeat=10, vary=1000)
    if "searches" in parts:
        searches = {
            "search, ~1,000 matches (`s12`...)": "s1{}",
            "search, a few matches (`s1234`...)": "s12{}",
            "search, no match (`zqx`...)": "zqx{}",
            "search, 2 characters, no match (`qz`)": "qz&offset={}",
            "search, 1 character, no match (`q`)": "q&offset={}",
            "search, 2 characters, 7,382 matches (`99`)": "99&offset={}",
            "search, 2 characters, 111,111 matches (`s1`)": "s1&offset={}",
            "search, 1 character, every sender (`e`)": "e&offset={}",
            "search, display name (`ender 77`...)": "ender 7{}",
        }
        for label, query in searches.items():
            extra[label] = single(base, "/api/senders?limit=50&q=" + query, repeat=10)
        extra["search `s1` + sort by bytes"] = single(base, "/api/senders?limit=50&sort=bytes&q=s1{}", repeat=10)
        # Ten first requests each (ten different texts, so none reuses another's count).
        extra["search, 2 characters, no match, first request (10 pairs)"] = _firsts(
            base, ["qz", "qj", "zj", "jx", "vq", "xz", "jq", "zx", "qv", "vj"]
        )
        extra["search, 1 character, ~1/3 to all senders, first request (`0`…`9`)"] = _firsts(base, list("0123456789"))
        extra["search, 3+ characters, 11,111 to 200,000 matches, first request (10 texts)"] = _firsts(
            base, ["news", ".co.uk", "sender", "ender 7", "s12", "s34", "d12", "@news", "co.uk", "ender"]
        )
    if "presets" in parts:
        presets = {
            "likely unsubscribe (page preset)": "min_messages=10&min_unread_ratio=0.8&has_unsubscribe=true",
            "mostly unread (page preset)": "min_messages=5&min_unread_ratio=0.8",
            "has an unsubscribe link": "has_unsubscribe=true",
            "at least 5 messages": "min_messages=5",
        }
        for label, query in presets.items():
            # The first request counts the filter; later pages and sorts reuse the count.
            extra[f"{label}, first request then 9 pages"] = single(
                base, f"/api/senders?limit=50&{query}&offset={{}}", repeat=10
            )
            extra[f"{label}, sorted by size"] = single(
                base, f"/api/senders?limit=50&sort=bytes&{query}&offset={{}}", repeat=10
            )
    if "find" in parts:  # #22: the date, size and month terms and the unread-count sort
        finds = {
            "last mail before a day (silent 2 years)": "last_before=2020-01-01",
            "first mail on or after a day (new this year)": "first_after=2024-06-01",
            "average message at least 100 KB": "min_avg_bytes=102400",
            "mail in one month (a chart bar)": "month=2019-06",
        }
        for label, query in finds.items():
            extra[f"{label}, first request then 9 pages"] = single(
                base, f"/api/senders?limit=50&{query}&offset={{}}", repeat=10
            )
        extra["page sorted by unread count desc"] = single(
            base, "/api/senders?limit=50&sort=unread&offset={}", repeat=10, vary=1000
        )
        extra["mostly unread sorted by unread count"] = single(
            base, "/api/senders?limit=50&sort=unread&min_messages=5&min_unread_ratio=0.8&offset={}", repeat=10
        )
        extra["domains.csv (all domains)"] = single(base, "/api/domains.csv", repeat=2)
    if "domains" in parts:
        for sort in ("mails_sent", "senders", "domain", "bytes", "last_seen", "unread_ratio"):
            extra[f"domains sorted by {sort}"] = single(
                base, f"/api/domains?limit=50&sort={sort}&offset={{}}", repeat=10, vary=500
            )
        extra["domains, 5 hidden senders"] = single(
            base, "/api/domains?limit=50&offset={}" + "".join(f"&exclude=s{i}@news.d{i}.co.uk" for i in range(5)), 10
        )
    if "hidden" in parts:
        extra.update(_hidden_sets(base))
    if "volume" in parts:
        extra["volume, whole mailbox"] = single(base, "/api/volume?exclude=s{}@x", repeat=10)
        extra["volume, top sender"] = single(base, "/api/volume?sender=s0@news.d0.co.uk&exclude=s{}@x", repeat=10)
        extra["volume, top domain"] = single(base, "/api/volume?domain=d0.co.uk&exclude=s{}@x", repeat=10)
    if "export" in parts:
        extra["export.csv (all 200k)"] = single(base, "/api/export.csv", repeat=2)
    return extra
