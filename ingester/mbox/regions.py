"""What framing yields: a message's byte region, the separator line that opened it (its postmark) and where the
next one starts. Plain values, made once per message; `mbox.py` and `lengths.py` cut files into them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from shared.mbox_format import SEPARATOR, separator_date, separator_zone, zone_offset


# The three values below are made once per message: NamedTuples, because a frozen dataclass's `__init__` (one
# `object.__setattr__` per field) cost a tenth of the framing's time on small messages.
class Postmark(NamedTuple):
    """A separator line: its envelope token, and its date (parsed only when a message's Date header fails)."""

    envelope: bytes
    line: bytes

    @property
    def date_unix(self) -> int | None:
        match = SEPARATOR.match(self.line)
        return separator_date(match) if match is not None else None

    @property
    def zone_note(self) -> str | None:
        """What to warn when the date's zone is a name we do not know (the date is then read as UTC)."""
        match = SEPARATOR.match(self.line)
        zone = separator_zone(match) if match is not None else b""
        if not zone or zone_offset(zone) is not None:
            return None
        return f"separator time zone {zone.decode('ascii', 'replace')!r} unknown; its date read as UTC"

    @property
    def gmail_id(self) -> str | None:
        """Takeout's envelope `<decimal>@xxx` is Gmail's message id in decimal; the API shows it in hex."""
        local = self.envelope.split(b"@", 1)[0]
        if not local.isdigit() or len(local) > 20:
            return None
        return format(int(local), "x")


class Region(NamedTuple):
    """Bytes `[start, end)` of the file: a message (with `postmark`), or (without) text before the first
    separator or, when `suspect`, from a line that looks like a separator of an unknown shape."""

    start: int
    end: int
    postmark: Postmark | None
    header_block: bytes
    suspect: bool = False
    header_cut: bool = False  # the header block ran past `HEADER_CAP_BYTES`: `header_block` is only its start
    suspect_line: bytes = b""  # when `suspect`, the line (its first `SEPARATOR_WINDOW` bytes)
    length_framed: bool = False  # framed by its Content-Length (`ingester.mbox.lengths`), not by separators

    @property
    def size(self) -> int:
        return self.end - self.start


class Separator(NamedTuple):
    start: int
    header_start: int
    postmark: Postmark | None  # None: a suspect line
    line: bytes = b""  # the suspect line (warnings quote it)


def parse_postmark(match: re.Match[bytes]) -> Postmark:
    envelope, line = match.group(1, 0)
    return Postmark(envelope, line)
