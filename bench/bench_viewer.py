"""Viewer latency under 20 concurrent pollers, and viewer RSS, on a generated 200k-sender / 2M-message database.

Run: `.venv/bin/python -m bench.bench_viewer [--seconds 15] [--pollers 20]`. The database is generated once with
bulk SQL through the real migrations and cached at `bench/out/viewer-200k.db` (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from shared.db import close_writer_keeping_sidecars, writer_engine
from shared.schema.migration_rollups import BACKFILL_ROLLUPS
from shared.schema.migration_search import SEARCH_KEY_SQL
from shared.schema.migrations import LATEST_VERSION, migrate
from shared.schema.models import search_key
from shared.text.domains import registrable_domain

OUT = Path(__file__).parent / "out"
DB = OUT / f"viewer-200k-v{LATEST_VERSION}.db"
SENDERS = 200_000
MESSAGES = 2_000_000


DOMAINS = 30_000
FIRST_DAY = 1_420_070_400  # 2015-01-01
PARTS = ["pollers", "sorts", "searches", "presets", "find", "domains", "hidden", "volume", "export"]


def generate(db: Path) -> None:
    """Every sender gets one message, the rest go to a skewed few (most mail from few senders, as in real life).

    Senders spread over 30,000 registrable domains, ten years of dates, a third with unsubscribe links. The
    rollups are then built by the migration's own backfill statements, the search index by FTS5's rebuild.
    """
    OUT.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    engine = writer_engine(db)
    migrate(engine)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.exec_driver_sql(
            f"""
            WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < {MESSAGES - 1}),
            -- Materialised: otherwise each use of `k` below draws its own random() values.
            m AS MATERIALIZED (
                SELECT x, CASE WHEN x < {SENDERS} THEN x
                          ELSE CAST({SENDERS} * ((abs(random()) % 1000000) / 1e6)
                                              * ((abs(random()) % 1000000) / 1e6)
                                              * ((abs(random()) % 1000000) / 1e6) AS INTEGER) END AS k FROM n)
            INSERT INTO seen_mails (mail_id, rfc_message_id, sender, date_unix, size_bytes, unread, source, run_id,
                                    counted)
            SELECT 'mid:' || x || '@bench', x || '@bench',
                   's' || k || '@news.d' || (k % {DOMAINS}) || '.co.uk',
                   {FIRST_DAY} + (x * 97) % 315360000, 2000 + (x * 7919) % 150000, (x * 31) % 3 = 0, 'mbox', 1, 1
            FROM m
            """
        )
        conn.exec_driver_sql(
            """
            INSERT INTO senders (sender, display_name, mails_sent, first_seen_unix, last_seen_unix, bytes, unread,
                                 list_unsubscribe, domain, unsubscribe_web, unsubscribe_mailto, unsubscribe_unix,
                                 one_click)
            SELECT sender, 'Sender ' || substr(sender, 2, instr(sender, '@') - 2), count(*), min(date_unix),
                   max(date_unix), sum(size_bytes), sum(unread), (length(sender) % 3 = 0) * count(*),
                   substr(sender, instr(sender, '@') + 6),
                   CASE WHEN length(sender) % 3 = 0
                        THEN 'https://' || substr(sender, instr(sender, '@') + 1) || '/u' END,
                   NULL, CASE WHEN length(sender) % 3 = 0 THEN max(date_unix) END, length(sender) % 2
            FROM seen_mails GROUP BY sender
            """
        )
        conn.exec_driver_sql(f"UPDATE senders SET search_key = {SEARCH_KEY_SQL}")
        conn.exec_driver_sql(
            "INSERT INTO sender_months (sender, month, messages, bytes)"
            " SELECT sender, strftime('%Y-%m', date_unix, 'unixepoch'), count(*), sum(size_bytes)"
            " FROM seen_mails GROUP BY 1, 2"
        )
        for statement in BACKFILL_ROLLUPS:
            conn.exec_driver_sql(statement)
        conn.exec_driver_sql("INSERT INTO sender_search (sender_search) VALUES ('rebuild')")
        assert conn.exec_driver_sql("SELECT count(*) FROM senders").scalar_one() == SENDERS
        sample = conn.exec_driver_sql("SELECT sender, domain, display_name, search_key FROM senders LIMIT 1").one()
        assert registrable_domain(sample[0]) == sample[1], sample  # the generator's domains are the real rule's
        assert search_key(sample[0], sample[2]) == sample[3], sample  # and its search keys the ingester's
        conn.exec_driver_sql(
            f"""
            INSERT INTO ingest_runs (source, state, pid, started_at_unix, updated_at_unix, finished_at_unix,
                                     messages_seen, messages_new, bytes_total, bytes_done, outcome)
            VALUES ('mbox', 'done', 1, 1700000000, 1700000600, 1700000600, {MESSAGES}, {MESSAGES}, 1, 1, 'complete')
            """
        )
    close_writer_keeping_sidecars(engine, db)
    print(f"generated {db} in {time.perf_counter() - started:.0f} s ({db.stat().st_size / 1e6:.0f} MB)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: steadier than latency on a shared machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _poller(client: httpx.AsyncClient, until: float, pause: float, results: dict[str, list[float]]) -> None:
    # Browser tabs are not synchronised: each poller starts at a random point of its cycle.
    await asyncio.sleep(random.uniform(0, pause))
    while time.monotonic() < until:
        for name, url in (("status", "/api/status"), ("page", "/api/senders?limit=50")):
            t0 = time.perf_counter()
            response = await client.get(url)
            results[name].append(time.perf_counter() - t0)
            assert response.status_code == 200, response.text
        await asyncio.sleep(pause)


async def _load(base: str, *, pollers: int, seconds: float, pause: float) -> dict[str, list[float]]:
    """The pollers, with this process's garbage collector paused (see `_single`): one event loop times all 20."""
    results: dict[str, list[float]] = {"status": [], "page": []}
    limits = httpx.Limits(max_connections=pollers)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        until = time.monotonic() + seconds
        gc.collect()
        gc.disable()
        try:
            await asyncio.gather(*(_poller(client, until, pause, results) for _ in range(pollers)))
        finally:
            gc.enable()
    return results


def _heartbeat(stop: threading.Event) -> None:
    """What a running ingester does to the file: a small commit twice a second (the cache then misses often)."""
    engine = writer_engine(DB)
    try:
        while not stop.wait(0.5):
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE ingest_runs SET updated_at_unix = updated_at_unix + 1")
    finally:
        close_writer_keeping_sidecars(engine, DB)


def _single(base: str, url: str, repeat: int = 20, vary: int = 0) -> list[float]:
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
    return [_single(base, f"/api/senders?limit=50&q={text}", repeat=1)[0] for text in texts]


def _register_hidden(base: str, senders: list[str]) -> str:
    """What the page does with its hidden senders: one `POST /api/hidden`, then `hidden=<id>` on every read."""
    with httpx.Client(base_url=base, timeout=60) as client:
        token = client.get("/api/status").json()["csrf_token"]
        headers = {"X-Gmail-Stats-Csrf": token}
        return str(client.post("/api/hidden", json={"senders": senders}, headers=headers).json()["hidden"])


def _thousand(start: int) -> list[str]:
    """1,000 hidden senders spread over the mailbox (every 200th from `start`, over 150 domains), the busiest first."""
    return [_address(k) for k in range(start, SENDERS, SENDERS // 1000)]


def _address(k: int) -> str:
    return f"s{k}@news.d{k % DOMAINS}.co.uk"


def _hidden_sets(base: str) -> dict[str, list[float]]:
    """1,000 hidden senders: pages of one set; a Hide click (the set plus one more sender each time, as the page
    sends it); and new sets of 1,000 that share nothing with any set before (a viewer just restarted)."""
    extra: dict[str, list[float]] = {}
    hidden = f"&hidden={_register_hidden(base, _thousand(0))}"
    extra["page, 1,000 hidden senders"] = _single(base, "/api/senders?limit=50&offset={}" + hidden, 10)
    extra["page sorted by bytes, 1,000 hidden"] = _single(
        base, "/api/senders?limit=50&sort=bytes&offset={}" + hidden, 10
    )
    extra["domains, 1,000 hidden senders"] = _single(base, "/api/domains?limit=50&offset={}" + hidden, 10)
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
    return lambda i: f"{route}&exclude={_address(50 + 1000 * i + shift)}{hidden}"


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


def _extra(base: str, parts: set[str]) -> dict[str, list[float]]:
    """Distinct queries (a varying offset or query), so each one misses the cache and measures the SQL.

    A search of one or two characters cannot vary its text: its later pages reuse the count of its first (kept
    for the generation), so its p95 (the 10th of 10) is the first, uncounted request."""
    extra: dict[str, list[float]] = {}
    if "sorts" in parts:
        extra["page at offset 100,000"] = _single(base, "/api/senders?limit=50&offset={}", vary=100_000)
        for sort in ("mails_sent", "sender", "name", "last_seen", "first_seen", "bytes", "unread_ratio"):
            for order in ("desc", "asc"):
                url = f"/api/senders?limit=50&sort={sort}&order={order}&offset={{}}"
                extra[f"page sorted by {sort} {order}"] = _single(base, url, repeat=10, vary=1000)
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
            extra[label] = _single(base, "/api/senders?limit=50&q=" + query, repeat=10)
        extra["search `s1` + sort by bytes"] = _single(base, "/api/senders?limit=50&sort=bytes&q=s1{}", repeat=10)
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
            extra[f"{label}, first request then 9 pages"] = _single(
                base, f"/api/senders?limit=50&{query}&offset={{}}", repeat=10
            )
            extra[f"{label}, sorted by size"] = _single(
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
            extra[f"{label}, first request then 9 pages"] = _single(
                base, f"/api/senders?limit=50&{query}&offset={{}}", repeat=10
            )
        extra["page sorted by unread count desc"] = _single(
            base, "/api/senders?limit=50&sort=unread&offset={}", repeat=10, vary=1000
        )
        extra["mostly unread sorted by unread count"] = _single(
            base, "/api/senders?limit=50&sort=unread&min_messages=5&min_unread_ratio=0.8&offset={}", repeat=10
        )
        extra["domains.csv (all domains)"] = _single(base, "/api/domains.csv", repeat=2)
    if "domains" in parts:
        for sort in ("mails_sent", "senders", "domain", "bytes", "last_seen", "unread_ratio"):
            extra[f"domains sorted by {sort}"] = _single(
                base, f"/api/domains?limit=50&sort={sort}&offset={{}}", repeat=10, vary=500
            )
        extra["domains, 5 hidden senders"] = _single(
            base, "/api/domains?limit=50&offset={}" + "".join(f"&exclude=s{i}@news.d{i}.co.uk" for i in range(5)), 10
        )
    if "hidden" in parts:
        extra.update(_hidden_sets(base))
    if "volume" in parts:
        extra["volume, whole mailbox"] = _single(base, "/api/volume?exclude=s{}@x", repeat=10)
        extra["volume, top sender"] = _single(base, "/api/volume?sender=s0@news.d0.co.uk&exclude=s{}@x", repeat=10)
        extra["volume, top domain"] = _single(base, "/api/volume?domain=d0.co.uk&exclude=s{}@x", repeat=10)
    if "export" in parts:
        extra["export.csv (all 200k)"] = _single(base, "/api/export.csv", repeat=2)
    return extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--pollers", type=int, default=20)
    parser.add_argument("--pause", type=float, default=1.0, help="pause between a poller's cycles (the page: 1 s)")
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, default=PARTS, help="measure only these parts (the machine is shared)"
    )
    args = parser.parse_args(argv)
    parts = set(args.only)
    if args.regenerate or not DB.exists():
        generate(DB)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GMAIL_STATS_")}
    env["GMAIL_STATS_IMPORT_DIR"] = str(OUT)
    server = subprocess.Popen(
        [sys.executable, "-m", "viewer", "--db", str(DB), "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/api/status", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        idle_rss, _ = _rss_kib(server.pid)
        _single(base, "/api/senders?limit=50", repeat=5)  # warm the page cache
        idle: dict[str, list[float]] = {"status": [], "page": []}
        busy = idle
        cpu: dict[str, float] = {}
        if "pollers" in parts:
            before = _cpu_seconds(server.pid)
            idle = asyncio.run(_load(base, pollers=args.pollers, seconds=args.seconds, pause=args.pause))
            cpu["idle"] = (_cpu_seconds(server.pid) - before) / max(1, len(idle["status"]) + len(idle["page"]))
            stop = threading.Event()
            writer = threading.Thread(target=_heartbeat, args=(stop,), daemon=True)
            writer.start()
            before = _cpu_seconds(server.pid)
            try:
                busy = asyncio.run(_load(base, pollers=args.pollers, seconds=args.seconds, pause=args.pause))
            finally:
                stop.set()
                writer.join()
            cpu["busy"] = (_cpu_seconds(server.pid) - before) / max(1, len(busy["status"]) + len(busy["page"]))
        extra = _extra(base, parts)
        rss, peak = _rss_kib(server.pid)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    print(
        f"\n{args.pollers} pollers, each polling status + a 50-row page every {args.pause} s for {args.seconds:.0f} s\n"
    )
    print("| request (single, uncached unless said) | n | p50 ms | p95 ms | max ms |")
    print("| --- | --- | --- | --- | --- |")
    rows = {
        "`/api/senders` page, 20 pollers, idle database": idle["page"],
        "`/api/status`, 20 pollers, idle database": idle["status"],
        "`/api/senders` page, 20 pollers, commits every 0.5 s": busy["page"],
        "`/api/status`, 20 pollers, commits every 0.5 s": busy["status"],
        **extra,
    }
    for name, samples in rows.items():
        if not samples:
            continue
        print(
            f"| {name} | {len(samples)} | {_pct(samples, 0.5):.1f} | {_pct(samples, 0.95):.1f} | "
            f"{max(samples) * 1000:.1f} |"
        )
    for phase, seconds in cpu.items():
        print(f"\nviewer CPU per polled request ({phase} database): {seconds * 1000:.2f} ms")
    print(f"\nviewer RSS: {idle_rss / 1024:.0f} MB idle, {rss / 1024:.0f} MB at the end, peak {peak / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
