"""RFC 2047 encoded-words to text in one linear pass, for any input: never raises, and says what was odd.

The standard library's `email.header.decode_header` raises on a broken word (`HeaderParseError`, `UnicodeError`,
`LookupError`) and slows down sharply with the number of words; headers are written by strangers, so neither will
do here. A word that cannot be decoded stays as its raw text.
"""

from __future__ import annotations

import binascii
import codecs
import re
from dataclasses import dataclass

from shared.text.storable import SURROGATE_NOTE, storable

# RFC 2047 section 2: `=?charset?encoding?encoded-text?=`; encoded-text holds neither `?` nor white space.
ENCODED_WORD = re.compile(r"=\?([^?\s]*)\?([bBqQ])\?([^?\s]*)\?=")
_WORD = ENCODED_WORD
_BASE64_JUNK = re.compile(rb"[^A-Za-z0-9+/]")
_MAX_NAME = 40


@dataclass(frozen=True, slots=True)
class Decoded:
    """The text, and the first thing that could not be decoded (None when every word decoded cleanly)."""

    text: str
    problem: str | None = None


def _printable_name(charset: str) -> str:
    """A charset name fit for a warning: it comes from the message, so it is shortened and made printable."""
    return repr(charset[:_MAX_NAME])


def _word_bytes(encoding: str, text: str) -> bytes | None:
    """The octets of one word's encoded-text, or None when they are malformed."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        if encoding in "qQ":
            # RFC 2047 section 4.2: `_` is a space, `=XX` an octet; `a2b_qp` keeps a malformed `=` as it is.
            return binascii.a2b_qp(data, header=True)
        data = _BASE64_JUNK.sub(b"", data.rstrip(b"="))
        if len(data) % 4 == 1:
            return None  # no padding makes a lone trailing sextet whole
        # Missing padding is common and harmless (the standard library adds it too).
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return None


_ESCAPE_CODECS = frozenset({"unicode-escape", "raw-unicode-escape"})


def _to_text(charset: str, octets: bytes) -> tuple[str | None, str | None]:
    """(text, problem); text is None when the octets are left as the raw words. The text is always storable."""
    text, problem = _decoded(charset, octets)
    if text is None:
        return None, problem
    text, repaired = storable(text)
    if repaired:  # UTF-7 (`+2AA-`) and punycode decode to lone surrogates, which no database stores
        return text, problem or f"charset {_printable_name(charset)}: {SURROGATE_NOTE}"
    return text, problem


def _decoded(charset: str, octets: bytes) -> tuple[str | None, str | None]:
    name = charset.split("*", 1)[0]  # RFC 2231 section 5: `charset*language`
    try:
        if codecs.lookup(name or "ascii").name in _ESCAPE_CODECS:
            raise LookupError(name)  # Python source escapes, not a mail charset (and they warn on bad input)
        return octets.decode(name or "ascii", "replace"), None
    except LookupError:
        pass  # an unknown charset, or a codec that is not a text encoding
    except (UnicodeError, ValueError, TypeError):
        return None, f"charset {_printable_name(charset)} could not decode its text"
    try:
        text = octets.decode("utf-8")  # a mislabelled charset is most often UTF-8 or ASCII
    except UnicodeDecodeError:
        return None, f"unknown charset {_printable_name(charset)}"
    return text, f"unknown charset {_printable_name(charset)}"


def decode_words(value: str) -> Decoded:
    """`value` with its encoded-words decoded; white space between adjacent words is dropped (section 6.2).

    Adjacent words of one charset are decoded together, so a character split across two words survives. The
    text is always storable (`shared.text.storable`), whatever `value` holds.
    """
    value, repaired = storable(value)
    if "=?" not in value:
        return Decoded(value, f"the text: {SURROGATE_NOTE}" if repaired else None)
    pieces: list[str] = []
    problem: str | None = f"the text: {SURROGATE_NOTE}" if repaired else None
    pos = 0
    run_charset: str | None = None
    run_octets: list[bytes] = []
    run_start = run_end = 0

    def flush() -> None:
        nonlocal run_charset, problem
        if run_charset is None:
            return
        text, trouble = _to_text(run_charset, b"".join(run_octets))
        pieces.append(value[run_start:run_end] if text is None else text)
        problem = problem or trouble
        run_charset = None
        run_octets.clear()

    for match in _WORD.finditer(value):
        gap = value[pos : match.start()]
        charset, encoding, text = match.groups()
        octets = _word_bytes(encoding, text)
        adjacent = run_charset is not None and (not gap or gap.isspace())
        if octets is None:
            flush()
            pieces.append(gap)
            pieces.append(match.group())
            problem = problem or f"broken encoded-word (charset {_printable_name(charset)})"
        elif adjacent and charset.lower() == (run_charset or "").lower():
            run_octets.append(octets)
            run_end = match.end()
        else:
            flush()
            if not adjacent:
                pieces.append(gap)
            run_charset, run_start, run_end = charset, match.start(), match.end()
            run_octets.append(octets)
        pos = match.end()
    flush()
    pieces.append(value[pos:])
    return Decoded("".join(pieces), problem)
