"""`python -m ingester.mbox.parse_worker`: a child that parses mbox segments for its parent importer.

Frames on stdin/stdout are an 8-byte length then a pickle (a private pipe between our own processes). It
ignores SIGINT/SIGTERM — the parent decides when to stop — and exits when stdin closes, so it never outlives
a parent that was killed. It is started with a fresh interpreter, so it never holds the ingest lock.
"""

from __future__ import annotations

import pickle
import signal
import struct
import sys
from typing import IO, Any

from ingester.mbox.segments import parse_segment

_LENGTH = struct.Struct("!Q")


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    parts: list[bytes] = []
    remaining = size
    while remaining:
        piece = stream.read(remaining)
        if not piece:
            break
        parts.append(piece)
        remaining -= len(piece)
    return b"".join(parts)


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next object, or None at end of stream (works on unbuffered pipes, which return short reads)."""
    header = _read_exact(stream, _LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(header)
    payload = _read_exact(stream, size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def write_frame(stream: IO[bytes], value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tasks, results = sys.stdin.buffer, sys.stdout.buffer
    while (task := read_frame(tasks)) is not None:
        try:
            write_frame(results, parse_segment(task))
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
