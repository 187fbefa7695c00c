"""A fuzz corpus of mutated mbox files, and `python -m tests.mbox.fuzz_corpus DIR DB`: import them all in one
process.

The runner imports every file through the real importer (`run_import`, a real database, parsing in-process) and
prints one JSON line: how many files were imported or refused (a clean `InputFileError`), the tracebacks of
anything else, the totals counted, and its own peak RSS. Mutations are seeded, so a failure reproduces.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support.factories import takeout_message

SHAPES = [
    b"From bob@example.com Wed Feb  9 23:15 MET 2000",
    b"From bob@example.com Wed Feb  9 01:05:34 1998 MEST",
    b"From bob@example.com Wed Feb  9 12:30:05 2001 -0400",
    b"From alice at example.com  Tue Jul 10 11:29:44 2012",
    b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001",
    b"From MAILER-DAEMON Thu Jan  1 00:00:00 1970",
    b"From 1785392015443392563@xxx Fri Dec 04 20:33:24 +0000 2020",
]
BAD_WORDS = [
    b"=?utf-7?B?K2dtQ?=",
    b"=?idna?Q?xn--abc?=",
    b"=?utf-8?b?%%%%?=",
    b"=?unicode_escape?q?=5CN{?=",
    b"=?undefined?q?x?=",
    b"=?utf-16?b?2D3YPQ?=",
    b"=?x*y?q?=FF=FE?=",
    b"=?=?=?",
    b"=?utf-8?q?=C3?=",
]
SUSPECT = b"From bob@example.com Wed, 9 Feb 2000 23:15:00 +0100"


def seed_mbox(rng: random.Random) -> bytes:
    """A small realistic file: Takeout messages and the separator shapes other tools write."""
    parts = []
    for index in range(rng.randint(3, 8)):
        raw = takeout_message(
            index=index, sender=f"s{index % 3}@example.com", display_name="Name", body_bytes=rng.randint(0, 600)
        ).raw
        if rng.random() < 0.3:
            raw = rng.choice(SHAPES) + raw[raw.index(b"\n") :]
        parts.append(raw)
    return b"".join(parts)


def _line_starts(data: bytes) -> list[int]:
    starts, newline = [0], data.find(b"\n")
    while newline != -1 and len(starts) < 2000:
        starts.append(newline + 1)
        newline = data.find(b"\n", newline + 1)
    return starts


def _at_line(rng: random.Random, data: bytes, insert: bytes) -> bytes:
    at = rng.choice(_line_starts(data))
    return data[:at] + insert + data[at:]


def _flip(rng: random.Random, data: bytes) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 40)):
        if buffer:
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randint(0, len(data))]


def _huge_header(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"X-Huge: " + b"h" * rng.randint(60_000, 400_000) + b"\n")


def _deep_fold(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"From: folded\n" + b" =?utf-8?q?f?=\n" * rng.randint(1_000, 30_000))


def _nul(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"\x00" * rng.randint(1, 5000))


def _bad_utf8(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"From: \xff\xfe\xc3\x28 <\xe2\x82@x>\nDate: \xa0\xa1\n")


def _broken_words(rng: random.Random, data: bytes) -> bytes:
    words = b" ".join(rng.choice(BAD_WORDS) for _ in range(rng.randint(1, 20)))
    header = rng.choice([b"From: ", b"X-Gmail-Labels: ", b"Sender: ", b"Date: "])
    return data.replace(b"\nFrom: ", b"\n" + header + words + b" <w@example.com>\nX-Was: ", rng.randint(1, 3))


def _word_flood(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"From: " + b"=?utf-8?q?J=C3=B6rg?= " * rng.randint(5_000, 60_000) + b"<f@x>\n")


def _storm(rng: random.Random, data: bytes) -> bytes:
    line = rng.choice(SHAPES) + b"\n"
    return _at_line(rng, data, line * rng.randint(50, 5_000))


def _no_blank_lines(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n\n", b"\n")


def _crlf(rng: random.Random, data: bytes) -> bytes:
    cut = rng.randint(0, len(data))
    return data[:cut] + data[cut:].replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\r"]))


def _suspect(rng: random.Random, data: bytes) -> bytes:
    return _at_line(rng, data, b"\n" + SUSPECT + b"\nFrom: sus@example.com\n\nbody\n")


def _shuffle(rng: random.Random, data: bytes) -> bytes:
    a, b = sorted(rng.randint(0, len(data)) for _ in range(2))
    return data[b:] + data[a:b] + data[:a]


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    _flip,
    _truncate,
    _huge_header,
    _deep_fold,
    _nul,
    _bad_utf8,
    _broken_words,
    _word_flood,
    _storm,
    _no_blank_lines,
    _crlf,
    _suspect,
    _shuffle,
]
# The costly ones (hundreds of KB each) are drawn less often, to keep the corpus quick to import.
_WEIGHTS = [10, 6, 1, 1, 4, 6, 8, 1, 2, 4, 4, 6, 4]


def mutated_mboxes(count: int, *, seed: int = 8) -> Iterator[tuple[str, bytes]]:
    """`count` (name, content) pairs, each a seed file with one to three mutations; names say which."""
    rng = random.Random(seed)
    for number in range(count):
        data = seed_mbox(rng)
        chosen = rng.choices(MUTATIONS, weights=_WEIGHTS, k=rng.randint(1, 3))
        for mutation in chosen:
            data = mutation(rng, data)
        name = "-".join(m.__name__.strip("_") for m in chosen)
        yield f"{number:04d}-{name}.mbox", data


def write_corpus(folder: Path, count: int, *, seed: int = 8) -> list[Path]:
    paths = []
    for name, data in mutated_mboxes(count, seed=seed):
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def _peak_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main(argv: list[str]) -> int:
    from ingester.mbox.importer import ImportRequest, run_import
    from ingester.runs.report import QuietReporter
    from ingester.runs.session import ingest_session
    from shared.errors import InputFileError
    from shared.timeutil import system_clock

    folder, db = Path(argv[0]), Path(argv[1])
    summary: dict[str, object] = {"imported": 0, "refused": 0, "seen": 0, "skipped": 0, "failures": []}
    failures: list[str] = []
    for path in sorted(folder.glob("*.mbox")):
        try:
            with ingest_session(db, clock=system_clock) as engine:
                result = run_import(
                    engine=engine,
                    request=ImportRequest(path=path),
                    reporter=QuietReporter(),
                    cancel=threading.Event(),
                    clock=system_clock,
                )
        except InputFileError:
            summary["refused"] = int(str(summary["refused"])) + 1
            continue
        except Exception:
            failures.append(f"{path.name}: {traceback.format_exc()}")
            continue
        summary["imported"] = int(str(summary["imported"])) + 1
        summary["seen"] = int(str(summary["seen"])) + result.messages_seen
        summary["skipped"] = int(str(summary["skipped"])) + result.messages_skipped
    summary["failures"] = failures
    summary["peak_rss_kb"] = _peak_rss_kb()
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
