"""Estimates while a first scan runs (issue 25): the random order against today's newest first, on the fake Google.

1. The race: one first scan of a Zipf-like mailbox (400 senders, the `typical` conversation mix of the scan
   benchmark, senders' activity drifting over the mailbox's life) in each order, the fake enforcing
   `250 * speed` units/s and the scan pacing at the same rate, so one wall second is `speed` seconds of Gmail time.
   While it runs the benchmark reads the database as the viewer would and records the first (Gmail) time when the
   20 truly largest senders' shares are each within ±1 percentage point of the truth and the estimated top 10 are
   the true top 10: from `shared.sampling` in random order, from the counts so far (what the table shows) newest
   first. Each scan then runs to the end: exactness, and the quota units each spent (counted by the fake).
2. Coverage: first scans with `--seeds` different order seeds of one mailbox, unpaced; at each sampled fraction
   the share of senders with >= 50 messages whose 95% interval of messages holds the truth (a sender not seen yet
   counts as missed).

Run: `.venv/bin/python -m bench estimates` (the issue's sizes: 500,000 messages, speed 10, 20 seeds; `--messages`,
`--coverage-messages`, `--speed`, `--seeds` to change them, `--only race|coverage`, `--write-readme`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from bench.bench_scan import DEFAULTS, Fake, start_fake
from bench.readme import replace_between_markers
from ingester.gmail.auth import GoogleAccess
from ingester.gmail.scan import run_scan
from ingester.gmail.scan_types import ScanRequest, ScanTuning
from ingester.runs.report import QuietReporter
from ingester.runs.session import ingest_session
from shared.db import reader_engine
from shared.sampling.estimator import estimate_groups
from shared.sampling.sample_reads import read_sample, read_sample_state
from shared.timeutil import system_clock
from tests.fakes.google import COSTS
from tests.fakes.mailbox import MIXES, Mailbox

ROOT = Path(__file__).resolve().parent.parent
MIX = "typical"
TOP_SHARES, TOP_SET, SHARE_TOLERANCE = 20, 10, 0.01
COVERAGE_AT = (0.02, 0.05, 0.10, 0.25, 0.50)
Shares = dict[str, float]


def truth(messages: int) -> dict[str, int]:
    """The exact per-sender counts of the fake's mailbox (the same generator, seed and options)."""
    return Mailbox.generate(messages, mix=MIXES[MIX], drift=True).expected_counts()


def _access(fake: Fake) -> GoogleAccess:
    return GoogleAccess(
        credentials_path=fake.credentials,
        tokens_path=fake.tokens,
        oauth_bind="127.0.0.1",
        oauth_port=0,
        auth_timeout=5,
        api_endpoint=fake.base_url,
        http_timeout=DEFAULTS.http_timeout,
        note=lambda text: None,
    )


def _scan_thread(
    fake: Fake, db: Path, *, units: float, random_order: bool, seed: int, cancel: threading.Event
) -> threading.Thread:
    tuning = replace(
        ScanTuning.from_settings(DEFAULTS), units_per_second=units, random_first_scan=random_order, order_seed=seed
    )

    def scan() -> None:
        with ingest_session(db, clock=system_clock) as engine:
            run_scan(
                engine=engine,
                request=ScanRequest(),
                access=_access(fake),
                tuning=tuning,
                reporter=QuietReporter(),
                cancel=cancel,
                clock=system_clock,
                on_consent_url=lambda url: None,
            )

    thread = threading.Thread(target=scan, name="scan")
    thread.start()
    return thread


def estimated_shares(engine: Engine) -> tuple[Shares, dict[str, tuple[float, float]], float]:
    """Estimated shares, 95% intervals of messages per sender, and the sampled fraction (empty while listing)."""
    with engine.connect() as conn:
        state = read_sample_state(conn) if _has_tables(engine) else None
        if state is None or not state.listed or state.threads_done == 0:
            return {}, {}, 0.0
        found = estimate_groups(*read_sample(conn, state, grouping="sender"))
    shares = {e.key: e.share.estimate for e in found}
    return shares, {e.key: (e.messages.low, e.messages.high) for e in found}, state.fraction


def _has_tables(engine: Engine) -> bool:
    with engine.connect() as conn:
        sql = "SELECT count(*) FROM sqlite_master WHERE name = 'scan_sample'"
        return bool(conn.exec_driver_sql(sql).scalar_one())


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT sender, mails_sent FROM senders WHERE mails_sent > 0").all()
    return {str(s): int(n) for s, n in rows}


def counted_shares(engine: Engine) -> Shares:
    """What the table shows newest first: each sender's count so far over all counted so far."""
    found = counts(engine)
    total = sum(found.values())
    return {s: n / total for s, n in found.items()} if total else {}


def criterion(shares: Shares, exact: dict[str, int]) -> bool:
    """The top 20 true senders' shares each within ±1 pp, and the estimated top 10 the true top 10."""
    if not shares:
        return False
    total = sum(exact.values())
    ranked = sorted(exact, key=lambda k: -exact[k])
    close = all(abs(shares.get(k, 0.0) - exact[k] / total) <= SHARE_TOLERANCE for k in ranked[:TOP_SHARES])
    top = set(sorted(shares, key=lambda k: -shares[k])[:TOP_SET])
    return close and top == set(ranked[:TOP_SET])


def race(messages: int, *, speed: float, random_order: bool, exact: dict[str, int], poll: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        units = 250 * speed
        fake = start_fake(Path(folder), messages, units, MIX, extra=("--drift",))
        try:
            db = Path(folder) / "stats.db"
            cancel = threading.Event()
            started = time.perf_counter()
            thread = _scan_thread(fake, db, units=units, random_order=random_order, seed=1, cancel=cancel)
            met_at: float | None = None
            met_fraction = 0.0
            reader: Engine | None = None
            while thread.is_alive():
                thread.join(poll)
                if met_at is not None or not db.exists():
                    continue
                reader = reader or reader_engine(db)
                try:
                    if random_order:
                        shares, _, fraction = estimated_shares(reader)
                    else:
                        shares, fraction = counted_shares(reader), 0.0
                except DBAPIError:  # the schema may not be there yet
                    continue
                if criterion(shares, exact):
                    met_at, met_fraction = time.perf_counter() - started, fraction
            wall = time.perf_counter() - started
            stats = fake.stats()
        finally:
            fake.stop()
        final = counts(reader_engine(db))
        spent = sum(COSTS[name] * stats.get(name, 0) for name in COSTS)
        return {
            "order": "random" if random_order else "newest first",
            "messages": messages,
            "speed": speed,
            "criterion_met_gmail_s": None if met_at is None else round(met_at * speed, 1),
            "criterion_met_at_fraction": round(met_fraction, 4),
            "complete_scan_gmail_s": round(wall * speed, 1),
            "complete_scan_wall_s": round(wall, 1),
            "quota_units": spent,
            "exact": final == exact,
        }


def coverage(messages: int, *, seeds: int, exact: dict[str, int], poll: float, up_to: float) -> dict[str, object]:
    big = [k for k, v in exact.items() if v >= 50]
    points = [at for at in COVERAGE_AT if at <= up_to]
    hits = dict.fromkeys(COVERAGE_AT, 0)
    tried = dict.fromkeys(COVERAGE_AT, 0)
    with tempfile.TemporaryDirectory() as folder:
        fake = start_fake(Path(folder), messages, None, MIX, extra=("--drift",))
        try:
            for seed in range(seeds):
                db = Path(folder) / f"stats-{seed}.db"
                cancel = threading.Event()
                thread = _scan_thread(fake, db, units=1e9, random_order=True, seed=seed, cancel=cancel)
                pending = list(points)
                reader: Engine | None = None
                while pending and thread.is_alive():
                    thread.join(poll)
                    if not db.exists():
                        continue
                    reader = reader or reader_engine(db)
                    try:
                        _, intervals, fraction = estimated_shares(reader)
                    except DBAPIError:  # the schema may not be there yet
                        continue
                    while pending and fraction >= pending[0]:
                        at = pending.pop(0)
                        tried[at] += len(big)
                        hits[at] += sum(k in intervals and intervals[k][0] <= exact[k] <= intervals[k][1] for k in big)
                cancel.set()
                thread.join()
                print(json.dumps({"seed": seed, "done": True}), file=sys.stderr, flush=True)
        finally:
            fake.stop()
    return {
        "messages": messages,
        "seeds": seeds,
        "senders_with_50_or_more": len(big),
        "coverage": {f"{at:.0%}": round(hits[at] / tried[at], 4) if tried[at] else None for at in points},
    }


def race_table(races: list[dict[str, object]], *, command: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Measured {stamp} with `{command}`.", ""]
    if races:
        lines += [
            "| order | messages | speed | top 20 within ±1 pp and top 10 right after (Gmail time) | at share sampled"
            " | complete scan (Gmail time) | quota units | exact |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in races:
            met = r["criterion_met_gmail_s"]
            sampled = f"{r['criterion_met_at_fraction']:.1%}" if r["order"] == "random" else "—"  # no sample
            lines.append(
                f"| {r['order']} | {r['messages']:,} | {r['speed']:g}x"
                f" | {'never before the end' if met is None else f'{met} s'}"
                f" | {sampled} | {r['complete_scan_gmail_s']} s | {r['quota_units']:,}"
                f" | {'yes' if r['exact'] else 'NO'} |"
            )
    return "\n".join(lines) + "\n"


def coverage_table(cover: dict[str, object], *, command: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Measured {stamp} with `{command}`.", ""]
    values = cover["coverage"]
    assert isinstance(values, dict)
    if values:
        lines += [
            f"Coverage of the 95% intervals of messages, {cover['seeds']} seeds, {cover['messages']:,} messages, "
            f"{cover['senders_with_50_or_more']} senders with ≥ 50 messages:",
            "",
            "| sampled | " + " | ".join(values) + " |",
            "|---|" + "---:|" * len(values),
            "| covered | " + " | ".join("—" if v is None else f"{v:.1%}" for v in values.values()) + " |",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000, help="mailbox of the race")
    parser.add_argument("--coverage-messages", type=int, default=500_000, help="mailbox of the coverage runs")
    parser.add_argument("--speed", type=float, default=10.0, help="Gmail seconds per wall second (quota times speed)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--coverage-up-to", type=float, default=0.5, help="the largest sampled share checked")
    parser.add_argument("--poll", type=float, default=1.0, help="wall seconds between reads of the database")
    parser.add_argument("--only", choices=("race", "coverage"))
    parser.add_argument("--quick", action="store_true", help="20,000 messages, 5 seeds")
    parser.add_argument("--write-readme", action="store_true", help="write the tables to bench/README.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.coverage_messages, args.seeds = 20_000, 20_000, 5
    races: list[dict[str, object]] = []
    cover = None
    if args.only in (None, "race"):
        exact = truth(args.messages)
        for random_order in (True, False):
            races.append(race(args.messages, speed=args.speed, random_order=random_order, exact=exact, poll=args.poll))
            print(json.dumps(races[-1]), flush=True)
    if args.only in (None, "coverage"):
        exact = truth(args.coverage_messages)
        cover = coverage(
            args.coverage_messages, seeds=args.seeds, exact=exact, poll=args.poll / 4, up_to=args.coverage_up_to
        )
        print(json.dumps(cover), flush=True)
    if args.write_readme:
        command = "python -m bench estimates " + " ".join(argv if argv is not None else sys.argv[2:])
        readme = ROOT / "bench" / "README.md"
        if races:
            replace_between_markers(readme, "estimates-race", race_table(races, command=command.strip()))
        if cover is not None:
            replace_between_markers(readme, "estimates-coverage", coverage_table(cover, command=command.strip()))
    return 0 if all(r["exact"] for r in races) else 1


if __name__ == "__main__":
    sys.exit(main())
