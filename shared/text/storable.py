"""Text fit for storage: lone surrogates (U+D800-U+DFFF), which no UTF-8 encoder accepts, become U+FFFD.

Decoders such as UTF-7 and punycode, and JSON's `\\ud800` escapes, turn a stranger's bytes into them; SQLite
refuses them, so every decoded header value passes here before it can reach the database. Pure.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
SURROGATE_NOTE = "it decoded to invalid Unicode (lone surrogates), replaced with U+FFFD"


def storable(text: str) -> tuple[str, bool]:
    """(`text` with every lone surrogate replaced by U+FFFD, whether any was); ASCII text is returned as is."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text, False
    return _SURROGATE.sub(REPLACEMENT, text), True
