"""Pure header-value rules shared by every ingester: sender keys, display names, Message-IDs, labels.

No I/O and no database here; every function is total (undecodable input never raises).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import getaddresses
from functools import lru_cache

from shared.text.rfc2047 import ENCODED_WORD, decode_words
from shared.text.storable import SURROGATE_NOTE, storable

_WHITESPACE = re.compile(r"\s+")
# Longer address values (hostile or broken) skip the stdlib parser and the caches; real ones are far shorter.
ADDRESS_PARSE_LIMIT = 2048
SENDER_CAP = 64 * 1024
# Blanks in addresses are the email parser's own (space, tab, CR, LF): a `\x1f`, form feed or no-break space in
# `0@\x1f0` is part of the address to `getaddresses`, so it must be here too, or the collapsed text key `0@ 0`
# would read back as another address (`0@0`) and a sender's key would not be stable.
_PLAUSIBLE_ADDRESS = re.compile(r"[^<>()\[\],;]+@[^<>()\[\],; \t\r\n@]+")
_ANGLE_ADDRESS = re.compile(r"<[ \t\r\n]*([^<> \t\r\n@]+@[^<> \t\r\n]+?)[ \t\r\n]*>")
# Starts only after a delimiter, so a long run without `@` is scanned once, not once per position.
_BARE_ADDRESS = re.compile(r"(?:^|(?<=[ \t\r\n<>(),;:\"]))([^ \t\r\n<>()\[\],;:\"@]+@[^ \t\r\n<>()\[\],;:\"@]+)")


@dataclass(frozen=True, slots=True)
class SenderIdentity:
    """Who sent a message; `problem` says what could not be decoded (the key is a best effort then)."""

    key: str
    display_name: str
    problem: str | None = None


def decode_rfc2047(value: str) -> str:
    """Decodes RFC 2047 encoded-words; a word that cannot be decoded (broken, unknown charset) stays raw."""
    return decode_words(value).text


def collapse_whitespace(value: str) -> str:
    return _WHITESPACE.sub(" ", value).strip()


def parse_sender(value: str) -> SenderIdentity:
    """Sender key = first address containing `@`, lower-cased; else the collapsed text. Total on any input.

    The one sender rule of every source (import, scan, Rust-era upgrade). Address first, words second, as
    `email.headerregistry` reads a header: the address is found in the raw value and RFC 2047 encoded-words are
    decoded only in the display name, since RFC 2047 section 5 allows none in an addr-spec; a stranger cannot
    encode `ceo@bank.example` into the name and be counted under it. Values of ordinary length go through a
    cache, because a mailbox repeats the same few thousand From values many times; longer ones (hostile or
    broken) are parsed each time so the cache never holds megabytes.
    """
    return cached_sender(value) if len(value) <= ADDRESS_PARSE_LIMIT else _sender(value)


@lru_cache(maxsize=65536)
def cached_sender(value: str) -> SenderIdentity:
    """`parse_sender` through the cache: only for values of at most `ADDRESS_PARSE_LIMIT` characters."""
    return _sender(value)


_WORD_AS_ADDRESS = (
    "encoded-words where the address should be (RFC 2047 section 5 allows none there); counted under the raw text"
)


# An encoded-word stands for one atom of a phrase (RFC 2047 section 5), as `email.headerregistry` reads it, so it
# is hidden behind a private-use token while the address is parsed: an `@` or `<` inside it is never structure.
_MASK = re.compile("\ue000(\\d+)\ue001")


# Mailman's pipermail archives write `user at host (Name)` for `Name <user@host>`: read as the address it stands for
# when nothing else in the value is an address; the host needs a dot, so "Meet me at home" stays text.
_PIPERMAIL = re.compile(
    r"\s*([^\s<>()\[\],;:\"@]+) at ([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)\s*(?:\((.*)\))?\s*", re.DOTALL
)


def _sender(value: str) -> SenderIdentity:
    """`_read`, with its key read again until it reads back as itself (at most a few rounds).

    The email parser and these rules disagree on odd text (`0@ 0`, `":0@0`, stray brackets): a key that would read
    back as another address would split one sender in two when a key is read again (the Rust-era upgrade reads
    stored senders). Ordinary addresses are stable at once, so this costs one more cached read per distinct value.
    """
    identity = _read(value)
    key = identity.key
    for _ in range(4):
        if "=?" in key:  # raw encoded-words stay raw: reading them again would decode them into the key
            break
        again = _read(key).key
        if again == key:
            break
        key = again
    return identity if key == identity.key else SenderIdentity(key, identity.display_name, identity.problem)


def _read(value: str) -> SenderIdentity:
    problem = None
    value, repaired = storable(value)
    if repaired:  # only text that did not come from bytes (a JSON escape in a Gmail API answer) holds these
        problem = f"the header: {SURROGATE_NOTE}"
    if len(value) > SENDER_CAP:
        # Bounded work per message; the address in <...> is usually at the end.
        value = value[: SENDER_CAP // 2] + " " + value[-SENDER_CAP // 2 :]
        problem = problem or f"longer than {SENDER_CAP:,} characters; only its two ends were read"
    words: list[str] = []

    def hide(match: re.Match[str]) -> str:
        words.append(match.group())
        return f"\ue000{len(words) - 1}\ue001"

    def unmask(text: str) -> str:
        return _MASK.sub(lambda m: words[int(m[1])], text) if words else text

    masked = ENCODED_WORD.sub(hide, value) if "=?" in value and "\ue000" not in value else value
    address, name = _address(masked)
    if address is not None:
        decoded = decode_words(unmask(name))
        # An encoded-word inside the address itself stays raw: it is not decoded into somebody else's address.
        return SenderIdentity(
            key=unmask(address).lower(),
            display_name=collapse_whitespace(decoded.text),
            problem=problem or decoded.problem,
        )
    pipermail = _PIPERMAIL.fullmatch(value)
    if pipermail is not None:
        user, host, comment = pipermail.groups()
        decoded = decode_words(comment or "")
        key = f"{user}@{host}".lower()
        return SenderIdentity(
            key=key, display_name=collapse_whitespace(decoded.text), problem=problem or decoded.problem
        )
    decoded = decode_words(value)
    problem = problem or decoded.problem
    if "@" in decoded.text and decoded.text != value:
        # No address outside encoded-words, but they decode to text with an `@`: never let that become the key.
        return SenderIdentity(key=collapse_whitespace(value), display_name="", problem=problem or _WORD_AS_ADDRESS)
    return SenderIdentity(key=collapse_whitespace(decoded.text), display_name="", problem=problem)


def _address(text: str) -> tuple[str | None, str]:
    """(first address with `@`, its display name) per `getaddresses`, else the first `<...@...>` or bare one.

    `getaddresses` recurses once per nested `(` and slows down on long input, so it only sees values of
    ordinary length; whatever it makes of the text, an address in angle brackets is still found.
    """
    if len(text) <= ADDRESS_PARSE_LIMIT:
        try:
            pairs = getaddresses([text])
        except Exception:  # RecursionError on nested comments, and whatever else a stranger's header provokes
            pairs = []
        for name, address in pairs:
            address = address.strip(" \t\r\n")  # the parser's blanks only, as in the patterns above
            if _PLAUSIBLE_ADDRESS.fullmatch(address):  # not e.g. `@0)`, which would not parse back to itself
                return address, name
    match = _ANGLE_ADDRESS.search(text) or _BARE_ADDRESS.search(text)
    if match is None:
        return None, ""
    name = text[: match.start()].strip().strip('"').strip() if match.re is _ANGLE_ADDRESS else ""
    return match.group(1), name


def normalize_message_id(value: str) -> str | None:
    """Trims, strips one surrounding `<>`, trims again; empty means the message has none."""
    text = value.strip()
    if len(text) >= 2 and text[0] == "<" and text[-1] == ">":
        text = text[1:-1].strip()
    return text or None


@dataclass(frozen=True, slots=True)
class Labels:
    """The label names of an `X-Gmail-Labels` value; `problem` says what was odd (the names are a best effort)."""

    names: tuple[str, ...]
    problem: str | None = None


# C0 controls (tab aside) and DEL: Takeout never writes them into a label name.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def decode_labels(value: str) -> Labels:
    """`X-Gmail-Labels` (comma-separated, possibly RFC 2047-encoded) as names, with a note on anything odd."""
    return _cached_labels(value) if len(value) <= ADDRESS_PARSE_LIMIT else _labels(value)


def parse_labels(value: str) -> tuple[str, ...]:
    return decode_labels(value).names


@lru_cache(maxsize=4096)
def _cached_labels(value: str) -> Labels:
    return _labels(value)


def _labels(value: str) -> Labels:
    decoded = decode_words(value)
    names = tuple(label for label in (part.strip() for part in decoded.text.split(",")) if label)
    problem = decoded.problem
    if problem is None and _CONTROL.search(decoded.text) is not None:
        problem = "control characters in label names"
    if problem is None and not names and value.strip():
        problem = "no label name in it"
    return Labels(names, problem)


# Gmail's system labels as Takeout writes them; reserved names, so compared case-insensitively.
SPAM_TRASH_LABELS = frozenset({"spam", "trash"})
UNREAD_LABEL = "unread"


def is_excluded(labels: tuple[str, ...], *, include_spam_trash: bool) -> bool:
    """Spam and Trash are left out unless asked for (the API scan excludes them too); Chat is never mail."""
    lowered = {label.lower() for label in labels}
    if "chat" in lowered:
        return True
    return not include_spam_trash and bool(lowered & SPAM_TRASH_LABELS)


def is_unread(labels: tuple[str, ...]) -> bool:
    return any(label.lower() == UNREAD_LABEL for label in labels)
