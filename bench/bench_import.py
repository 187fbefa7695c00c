"""Import benchmark: our `gmail-stats import` beside a `mailbox.mbox` baseline on generated Takeout-like files.

Every tool runs as a real child process, one after the other, on a warm page cache; this module only measures
and reports, and fails (exit 1) when our import's count differs from the number of messages generated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.process_tree import Measurement, measure
from bench.readme import replace_between_markers
from tests.support.factories import generate_gmail_shaped, generate_messages, write_mbox

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
MB = 1_000_000
RSS_TARGET_MB = 150.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Corpus:
    """Generator parameters of one file; they name the cached file, so changing one regenerates it.

    `gmail_shaped`: Gmail's header blocks (Received chains, ARC-*, DKIM-Signature, List-*) and a base64 attachment
    on every tenth message (`tests.support.factories.generate_gmail_shaped`); `body_bytes` is then unused. Else uniform
    messages with small header blocks and bodies of about `body_bytes`.
    """

    count: int
    body_bytes: int = 0
    target_mbps: float | None = None
    target_msgs: float | None = None
    senders: int = 2000
    seed: int = 7
    gmail_shaped: bool = False

    @property
    def name(self) -> str:
        if self.gmail_shaped:
            return f"gmail-shaped-{self.count}msg-{self.senders}senders-seed{self.seed}.mbox"
        return f"takeout-{self.count}msg-{self.body_bytes}B-{self.senders}senders-seed{self.seed}.mbox"

    @property
    def label(self) -> str:
        if self.gmail_shaped:
            return f"{self.count:,} Gmail-shaped, 10% with attachments"
        return f"{self.count:,} x ~{self.body_bytes // 1000} KB body"


@dataclass(frozen=True, slots=True)
class Tool:
    label: str
    command: tuple[str, ...]  # `{file}` and `{db}` are filled in per run
    env: tuple[tuple[str, str], ...] = ()
    ours: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    corpus: Corpus
    size: int
    tool: Tool
    run: Measurement
    counted: int | None


def corpora(*, quick: bool, large: bool, many_senders: bool = False) -> list[Corpus]:
    if quick:
        return [
            Corpus(count=500, body_bytes=100_000),
            Corpus(count=20_000, body_bytes=1_000),
            Corpus(count=2_000, gmail_shaped=True),
        ]
    chosen = [
        Corpus(count=10_000, body_bytes=100_000, target_mbps=500),
        Corpus(count=200_000, body_bytes=1_000, target_msgs=50_000),
        Corpus(count=20_000, gmail_shaped=True),  # ~330 MB, ~16 KB a message (a real Takeout: ~11 KB)
    ]
    if many_senders:  # every other message from a sender not seen before: the senders' rows and indexes dominate
        chosen.append(Corpus(count=200_000, body_bytes=1_000, senders=100_000))
    return [*chosen, Corpus(count=30_000, body_bytes=100_000)] if large else chosen


def tools() -> list[Tool]:
    python = sys.executable
    ours = (python, "-m", "ingester", "import", "{file}", "--db", "{db}", "--quiet")
    baseline = (python, "-m", "bench.baseline_mailbox")
    return [
        Tool("gmail-stats import (default settings)", ours, ours=True),
        Tool("gmail-stats import, `GMAIL_STATS_PARSE_WORKERS=0`", ours, (("GMAIL_STATS_PARSE_WORKERS", "0"),), True),
        Tool("baseline: `mailbox.mbox` + `parseaddr` + dict + SQLite", (*baseline, "count", "{file}", "--db", "{db}")),
        Tool("reference: bare `mailbox.mbox` iteration", (*baseline, "iterate", "{file}")),
        Tool("reference: `grep -c '^From '`", ("grep", "-c", "^From ", "{file}")),
    ]


def ensure_file(corpus: Corpus, out: Path) -> tuple[Path, int]:
    """Returns the cached file and its expected counted total, generating both when missing."""
    path, meta = out / corpus.name, out / (corpus.name + ".json")
    if path.is_file() and meta.is_file():
        return path, int(json.loads(meta.read_text())["expected_counted"])
    print(f"generating {path.name} ...", file=sys.stderr, flush=True)
    partial = path.with_suffix(".part")
    messages = (
        generate_gmail_shaped(count=corpus.count, senders=corpus.senders, seed=corpus.seed)
        if corpus.gmail_shaped
        else generate_messages(
            count=corpus.count, body_bytes=corpus.body_bytes, senders=corpus.senders, seed=corpus.seed
        )
    )
    expected = sum(write_mbox(partial, messages).values())
    partial.replace(path)  # a killed generation never leaves a file that looks complete
    meta.write_text(json.dumps({"messages": corpus.count, "expected_counted": expected}))
    return path, expected


def warm_cache(path: Path) -> None:
    """Reads the file once so that every tool starts from the same (warm) page cache."""
    with path.open("rb", buffering=0) as handle:
        while handle.read(8 * 1024 * 1024):
            pass


def db_total(db: Path) -> int | None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        (total,) = connection.execute("SELECT sum(mails_sent) FROM senders").fetchone()
    connection.close()
    return None if total is None else int(total)


def child_env(tool: Tool, out: Path) -> dict[str, str]:
    """Our environment without our settings, and with bytecode cached under `out` as an installed tool has it.

    Without a bytecode cache (`PYTHONDONTWRITEBYTECODE`, nothing precompiled) every start compiles SQLAlchemy
    and pydantic again, about 0.9 s here, which would be measured as import time.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GMAIL_STATS_", "PYTHONDONT"))}
    return {**env, "PYTHONPYCACHEPREFIX": str(out / "pycache"), **dict(tool.env)}


def run_tool(tool: Tool, corpus: Corpus, path: Path, out: Path) -> Row:
    env = child_env(tool, out)
    with tempfile.TemporaryDirectory(prefix="run-", dir=out) as scratch:
        db = Path(scratch) / "bench.db"
        command = [part.format(file=path, db=db) for part in tool.command]
        run = measure(command, env=env, cwd=REPO, workdir=Path(scratch))
        counted: int | None = None
        if run.exit_code == 0:
            counted = db_total(db) if tool.ours else int(run.stdout.split()[0])
    return Row(corpus, path.stat().st_size, tool, run, counted)


def failures(row: Row, expected: int) -> list[str]:
    where = f"{row.tool.label} on {row.corpus.name}"
    if row.run.exit_code != 0:
        return [f"{where}: exit {row.run.exit_code}: {row.run.stderr.strip()[-500:]}"]
    if row.tool.ours and row.counted != expected:
        return [f"{where}: counted {row.counted} messages, generated {expected}"]
    return []


def _size(size: int) -> str:
    return f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / MB:.0f} MB"


def table(rows: list[Row]) -> str:
    lines = [
        "| file | size | tool | seconds | MB/s | messages/s | peak RSS main | peak RSS tree | counted |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds = row.run.seconds
        lines.append(
            f"| {row.corpus.label} | {_size(row.size)} | "
            f"{row.tool.label} | {seconds:.2f} | {row.size / MB / seconds:,.0f} | "
            f"{row.corpus.count / seconds:,.0f} | {row.run.peak_main_kb * 1024 / MB:.0f} MB | "
            f"{row.run.peak_tree_kb * 1024 / MB:.0f} MB | {'—' if row.counted is None else f'{row.counted:,}'} |"
        )
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    """One line per target on our import rows; missing a target is reported, not a failure (noisy machine)."""
    lines = []
    for row in (row for row in rows if row.tool.ours and row.run.exit_code == 0):
        label = f"{row.tool.label}, {_size(row.size)}"
        mbps, msgs, rss = row.size / MB / row.run.seconds, row.corpus.count / row.run.seconds, row.run.peak_tree_kb
        checks = [("peak RSS tree", rss * 1024 / MB, RSS_TARGET_MB, False)]
        if row.corpus.target_mbps:
            checks.append(("MB/s", mbps, row.corpus.target_mbps, True))
        if row.corpus.target_msgs:
            checks.append(("messages/s", msgs, row.corpus.target_msgs, True))
        for what, value, target, at_least in checks:
            met = value >= target if at_least else value < target
            sign = "≥" if at_least else "<"
            lines.append(f"- {'met' if met else 'MISSED'}: {label}: {what} {value:,.0f} (target {sign} {target:,.0f})")
    return lines


def side_by_side(rows: list[Row]) -> list[str]:
    """Per file, how many times faster our default import ran than the baseline, in the same run."""
    lines = []
    for corpus in dict.fromkeys(row.corpus for row in rows):
        ours = [r for r in rows if r.corpus == corpus and r.tool.ours and not r.tool.env and r.run.exit_code == 0]
        base = [r for r in rows if r.corpus == corpus and r.tool.label.startswith("baseline") and r.run.exit_code == 0]
        if ours and base:
            a, b = ours[0].run.seconds, base[0].run.seconds
            lines.append(
                f"- side by side, {corpus.label}: our import {a:.2f} s, baseline {b:.2f} s: {b / a:.1f} times as fast"
            )
    return lines


def report(rows: list[Row], problems: list[str], argv: list[str]) -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(["python -m bench import", *argv])
    notes = side_by_side(rows) + verdicts(rows) + [f"- **FAILED**: {problem}" for problem in problems]
    return (
        f"Measured {stamp} with `{command}` (MB = 10⁶ bytes; warm page cache; wall time includes interpreter "
        f"start-up).\n\n{table(rows)}\n\n" + "\n".join(notes) + "\n"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench import",
        description="Time our Takeout import beside a mailbox.mbox baseline on generated files (cached in bench/out).",
        epilog="Example:\n  python -m bench import --quick\n  python -m bench import --large --write-readme",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small files (~50 MB) for a smoke run")
    parser.add_argument("--large", action="store_true", help="also a ~3 GB file, to show that RSS stays flat")
    parser.add_argument(
        "--many-senders", action="store_true", help="also 200,000 small messages from a Zipf draw over 100,000 senders"
    )
    parser.add_argument("--write-readme", action="store_true", help="replace the table in bench/README.md")
    return parser.parse_args(argv)


def warm_up(out: Path) -> None:
    """Runs the Python tools once, unmeasured, on a small file (big enough for parse workers) to fill the cache."""
    corpus = corpora(quick=True, large=False)[1]  # 20,000 small messages
    path, _ = ensure_file(corpus, out)
    print("warming up the bytecode cache ...", file=sys.stderr, flush=True)
    for tool in tools()[:3]:
        run_tool(tool, corpus, path, out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = BENCH_DIR / "out"
    out.mkdir(exist_ok=True)
    rows: list[Row] = []
    problems: list[str] = []
    warm_up(out)
    for corpus in corpora(quick=args.quick, large=args.large, many_senders=args.many_senders):
        path, expected = ensure_file(corpus, out)
        warm_cache(path)
        for tool in tools():
            print(f"running {tool.label} on {path.name} ...", file=sys.stderr, flush=True)
            rows.append(run_tool(tool, corpus, path, out))
            problems += failures(rows[-1], expected)
    text = report(rows, problems, sys.argv[1:] if argv is None else argv)
    print(text)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    if args.write_readme:
        replace_between_markers(BENCH_DIR / "README.md", "import", text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
