"""Hostile-input benchmark: `gmail-stats import` on files built to find quadratic time or unbounded memory.

Each file is imported by the real CLI as its own process (default settings); this module measures wall time and
the peak RSS of the process tree, and fails (exit 1) when a count is wrong or an import does not exit 0.
"""

from __future__ import annotations

import argparse
import datetime
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.bench_import import BENCH_DIR, REPO, child_env, warm_cache
from bench.bench_import import Tool as _Tool
from bench.process_tree import Measurement, measure
from bench.readme import replace_between_markers

SECONDS_TARGET = 5.0
RSS_TARGET_MB = 150.0
TAKEOUT = b"From 1234567890123456789@xxx Fri Dec 04 20:33:24 +0000 2020\n"


@dataclass(frozen=True, slots=True)
class Case:
    label: str
    name: str
    build: Callable[[], bytes]
    seen: int  # messages the run must read (counted or excluded)
    skipped: int  # regions it must skip, each with a warning
    target: bool = False  # one of the files issue 8 names, with its < 5 s target


def _storm() -> bytes:
    return b"From MAILER-DAEMON Thu Jan  1 00:00:00 2020\n" * 100_000


def _words() -> bytes:
    return TAKEOUT + b"From: " + b"=?utf-8?q?J=C3=B6rg?= " * 300_000 + b"<a@example.com>\nMessage-ID: <w@x>\n\nbody\n"


def _broken_words() -> bytes:
    return TAKEOUT + b"From: " + b"=?utf-7?B?K2dtQ?= " * 300_000 + b"<a@example.com>\nMessage-ID: <b@x>\n\nbody\n"


def _folded() -> bytes:
    return TAKEOUT + b"From: a@example.com\nX-Folded: x\n" + b" more\n" * 1_000_000 + b"\nbody\n"


def _no_blank_lines() -> bytes:
    return b"".join(
        b"From %d@xxx Fri Dec 04 20:33:24 +0000 2020\nFrom: a@example.com\n" % (10**18 + n) for n in range(100_000)
    )


# Issue 20's line: a lazy-run suspect-separator regex backtracked on it in the square of its length (~3 s a line).
_CRAFTED_LINE = b"From x " + b"Mon " * 170 + b"1" * 680 + b"\n"


def _crafted_lines() -> bytes:
    """The issue's generator verbatim, 780 KB: under 1 MiB, so it is parsed in the importer's own process."""
    return TAKEOUT + b"From: a@example.com\nMessage-ID: <c@x>\n\n" + (_CRAFTED_LINE + b"a" * 680 + b"\n") * 380


def _crafted_suspects() -> bytes:
    """The crafted line after a blank line and before a header-like line, 5,000 times: every step of the check."""
    suspect = b"\n" + _CRAFTED_LINE + b"a" * 80 + b":\n"  # the colon within the 2 KiB a separator is judged in
    return TAKEOUT + b"From: a@example.com\nMessage-ID: <s@x>\n\nbody\n" + suspect * 5000


def _one_huge_message() -> bytes:
    """One 1 GiB message: each 1 MiB segment used to read on to the message's end (time in its size squared)."""
    body = (b"x" * 99 + b"\n") * (1024**3 // 100)
    return TAKEOUT + b"From: a@example.com\nMessage-ID: <h@x>\n\n" + body


CASES = [
    Case("100,000 separator lines, nothing between them", "storm", _storm, 0, 100_000, target=True),
    # Header blocks of 5-7 MB: past the 4 MiB cap, so each is skipped with a warning (issue 20), never misread.
    Case("one From header of 300,000 encoded-words", "words", _words, 0, 1, target=True),
    Case("one From header of 300,000 broken encoded-words (utf-7)", "broken-words", _broken_words, 0, 1),
    Case("one header folded over 1,000,000 lines", "folded", _folded, 0, 1),
    Case("100,000 messages without a blank line after their headers", "no-blank", _no_blank_lines, 100_000, 0),
    Case("issue 20's crafted 2 KB line pair, 380 times (780 KB, in-process)", "crafted-lines", _crafted_lines, 1, 0),
    Case("the crafted line as 5,000 suspect separators (7 MB)", "crafted-suspects", _crafted_suspects, 1, 5000),
    Case("one message of 1 GiB", "huge-message", _one_huge_message, 1, 0),
]


@dataclass(frozen=True, slots=True)
class Row:
    case: Case
    size: int
    run: Measurement
    counts: tuple[int, int] | None  # (messages_seen, messages_skipped) of the run


def ensure_file(case: Case, out: Path) -> Path:
    path = out / f"hostile-{case.name}.mbox"
    if not path.is_file():
        partial = path.with_suffix(".part")
        partial.write_bytes(case.build())
        partial.replace(path)
    return path


def run_case(case: Case, path: Path, out: Path) -> Row:
    tool = _Tool("gmail-stats import", ())
    with tempfile.TemporaryDirectory(prefix="run-", dir=out) as scratch:
        db = Path(scratch) / "bench.db"
        command = [sys.executable, "-m", "ingester", "import", str(path), "--db", str(db), "--quiet"]
        run = measure(command, env=child_env(tool, out), cwd=REPO, workdir=Path(scratch))
        counts = None
        if run.exit_code == 0:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                seen, skipped = conn.execute("SELECT messages_seen, messages_skipped FROM ingest_runs").fetchone()
            conn.close()
            counts = (int(seen), int(skipped))
    return Row(case, path.stat().st_size, run, counts)


def report(rows: list[Row], problems: list[str], argv: list[str]) -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Measured {stamp} with `python -m bench hostile {' '.join(argv)}`".rstrip() + " (wall time includes "
        "interpreter start-up; MB = 10⁶ bytes).",
        "",
        "| file | size | seconds | peak RSS tree | read / skipped | targets (< 5 s, < 150 MB) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        seconds, rss = row.run.seconds, row.run.peak_tree_kb * 1024 / 1e6
        counts = "—" if row.counts is None else f"{row.counts[0]:,} / {row.counts[1]:,}"
        fast = seconds < SECONDS_TARGET or not row.case.target
        met = ("met" if fast and rss < RSS_TARGET_MB else "MISSED") + ("" if row.case.target else " (RSS only)")
        lines.append(
            f"| {row.case.label} | {row.size / 1e6:.1f} MB | {seconds:.2f} | {rss:.0f} MB | {counts} | {met} |"
        )
    lines += [f"- **FAILED**: {problem}" for problem in problems]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench hostile",
        description="Time imports of files built to provoke quadratic time or unbounded memory.",
        epilog="Example:\n  python -m bench hostile --write-readme",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m bench --quick`; same files")
    parser.add_argument("--write-readme", action="store_true", help="replace the table in bench/README.md")
    args = parser.parse_args(argv)
    out = BENCH_DIR / "out"
    out.mkdir(exist_ok=True)
    rows, problems = [], []
    for case in CASES:
        path = ensure_file(case, out)
        warm_cache(path)
        print(f"importing {path.name} ...", file=sys.stderr, flush=True)
        row = run_case(case, path, out)
        rows.append(row)
        if row.run.exit_code != 0:
            problems.append(f"{case.name}: exit {row.run.exit_code}: {row.run.stderr.strip()[-300:]}")
        elif row.counts != (case.seen, case.skipped):
            problems.append(f"{case.name}: read/skipped {row.counts}, expected {(case.seen, case.skipped)}")
    text = report(rows, problems, sys.argv[1:] if argv is None else list(argv))
    print(text)
    if args.write_readme:
        replace_between_markers(BENCH_DIR / "README.md", "hostile", text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
