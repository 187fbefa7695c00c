"""The baseline importer: the standard library's `mailbox.mbox`, as other Python tools use it.

Run by `bench_import` as its own process; prints the number of messages it counted and nothing else.
`count` parses From with `parseaddr`, counts per sender in a dict and writes the counts to SQLite at the end;
`iterate` only iterates the messages (no address parsing, no database).
"""

from __future__ import annotations

import argparse
import email.utils
import mailbox
import sqlite3
import sys
from pathlib import Path


def iterate(path: Path) -> int:
    box = mailbox.mbox(path, create=False)
    try:
        return sum(1 for _ in box)
    finally:
        box.close()


def count_senders(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    box = mailbox.mbox(path, create=False)
    try:
        for message in box:
            # str(): compat32 hands back an email.header.Header for undecodable bytes.
            _, address = email.utils.parseaddr(str(message.get("From", "")))
            key = address.lower()
            counts[key] = counts.get(key, 0) + 1
    finally:
        box.close()
    return counts


def write_counts(db: Path, counts: dict[str, int]) -> None:
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS senders (sender TEXT PRIMARY KEY, mails_sent INTEGER)")
        connection.executemany("INSERT INTO senders VALUES (?, ?)", counts.items())
    connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.baseline_mailbox",
        description="Count an mbox with the standard library's mailbox.mbox (benchmark baseline).",
        epilog="Example:\n  python -m bench.baseline_mailbox count big.mbox --db /tmp/baseline.db",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("mode", choices=["count", "iterate"])
    parser.add_argument("path", type=Path)
    parser.add_argument("--db", type=Path, help="SQLite file for the per-sender counts (mode count)")
    args = parser.parse_args(argv)
    if args.mode == "iterate":
        print(iterate(args.path))
        return 0
    if args.db is None:
        parser.error("count needs --db")
    counts = count_senders(args.path)
    write_counts(args.db, counts)
    print(sum(counts.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
