"""Gmail web-search links for senders and domains: the query syntax, its escaping and splitting into URLs.

Pure functions, no I/O: the viewer's JSON API, the page (through it) and `gmail-stats export` all build their
links here, so every link names each sender exactly once and is never truncated. Nothing here contacts Google.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote

# The longest URL we hand out. Gmail reads the query from the fragment in the page, so the binding limit is not
# HTTP's but what browsers, link handlers and Gmail's own search box keep intact; 2,000 characters (the historical
# lowest common browser limit) is far inside all of them. A longer selection becomes several numbered links.
URL_LIMIT = 2000
GMAIL_BASE = "https://mail.google.com/mail/"
DEFAULT_ACCOUNT_PATH = "u/0/"  # the first signed-in account: only when the address is unknown

# A term made only of these is passed bare; anything else is quoted so it cannot become an operator, a group or
# a negation. Gmail has no escape inside quotes, so a quote (or a control character) in the term becomes a space:
# Gmail ignores punctuation when matching, so the phrase still finds the sender.
_BARE = re.compile(r"[A-Za-z0-9._%+=@-]+")
_UNQUOTABLE = re.compile(r'["\x00-\x1f\x7f]')
_OPERATOR_WORDS = frozenset({"OR", "AND", "NOT", "AROUND"})
_ADDRESS = re.compile(r"[^@\s\"<>()\[\]\\,;:]+@[A-Za-z0-9.-]+\.[A-Za-z0-9-]+")
_OR = " OR "
# What `urllib.parse.quote(…, safe="")` leaves as is; everything else is percent-encoded byte by byte.
_UNRESERVED = re.compile(r"[^A-Za-z0-9_.~-]+")
_UNRESERVED_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~-"


def encode(text: str) -> str:
    """Exactly `quote(text, safe="")`, several times faster on addresses (only their few reserved runs are
    rewritten), which a 200k-sender selection needs."""
    return _UNRESERVED.sub(_percent, text)


@lru_cache(maxsize=4096)
def _percent_run(run: str) -> str:
    return "".join(f"%{b:02X}" for b in run.encode())


def _percent(match: re.Match[str]) -> str:
    return _percent_run(match.group())


def encoded_length(text: str) -> int:
    """`len(encode(text))`, counted without building it."""
    raw = text.encode()
    return len(raw) + 2 * len(raw.translate(None, _UNRESERVED_BYTES))


@dataclass(frozen=True, slots=True)
class Narrowing:
    """Optional search terms added after `from:(…)`; all off finds every message from the senders."""

    unread_only: bool = False
    older_than_months: int | None = None
    larger_than_mb: int | None = None
    in_inbox: bool = False

    def terms(self) -> tuple[str, ...]:
        terms: list[str] = []
        if self.unread_only:
            terms.append("is:unread")
        if self.older_than_months:
            terms.append(f"older_than:{self.older_than_months}m")
        if self.larger_than_mb:
            terms.append(f"larger:{self.larger_than_mb}M")
        if self.in_inbox:
            terms.append("in:inbox")
        return tuple(terms)


@dataclass(frozen=True, slots=True)
class GmailLink:
    number: int  # 1-based, in the order the senders were given
    query: str
    url: str
    senders: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LinkSet:
    links: tuple[GmailLink, ...]
    left_out: tuple[str, ...]  # not searchable (no letter or digit), or too long for a link on their own


def search_term(sender: str) -> str:
    """One sender (or domain) as a single Gmail search term: bare when safe, else one quoted phrase."""
    value = sender.strip()
    if _BARE.fullmatch(value) and not value.startswith("-") and value.upper() not in _OPERATOR_WORDS:
        return value
    return '"' + " ".join(_UNQUOTABLE.sub(" ", value).split()) + '"'


def searchable(sender: str) -> bool:
    """False for a sender Gmail could not search for: no letter or digit, so its term would match any mail."""
    return any(c.isalnum() for c in sender)


def from_clause(terms: Sequence[str]) -> str:
    return f"from:{terms[0]}" if len(terms) == 1 else f"from:({_OR.join(terms)})"


def search_query(senders: Sequence[str], narrowing: Narrowing = Narrowing()) -> str:
    """`from:(a OR b …)` then the narrowing terms, e.g. `from:(a@x.com OR b@y.com) is:unread in:inbox`."""
    terms = [search_term(s) for s in senders]
    return " ".join((from_clause(terms), *narrowing.terms()))


def valid_account(address: str) -> bool:
    """True for something shaped like a Gmail sign-in address (`authuser=` takes nothing else)."""
    return len(address) <= 320 and _ADDRESS.fullmatch(address) is not None


def search_url(query: str, account: str | None = None) -> str:
    """The Gmail web search for `query`, in `account` (`authuser=`) when known, else the first signed-in one."""
    where = f"?authuser={quote(account, safe='@')}" if account else DEFAULT_ACCOUNT_PATH
    return f"{GMAIL_BASE}{where}#search/{encode(query)}"


def split_links(
    senders: Iterable[str],
    narrowing: Narrowing = Narrowing(),
    *,
    account: str | None = None,
    limit: int = URL_LIMIT,
) -> LinkSet:
    """Links that together name each distinct sender exactly once, each URL at most `limit` characters.

    Greedy in the given order. Percent-encoding works character by character, so a URL's length is the sum of its
    encoded parts and is counted as the query grows, without re-encoding it.
    """
    fixed = len(search_url(" ".join(("from:()", *narrowing.terms())), account))
    sep = encoded_length(_OR)
    groups: list[list[str]] = []
    left_out: list[str] = []
    seen: set[str] = set()
    current: list[str] = []
    used = fixed
    for sender in senders:
        key = sender.strip()
        if key in seen:
            continue
        seen.add(key)
        size = encoded_length(search_term(key))
        if not searchable(key) or fixed + size > limit:
            left_out.append(sender)
            continue
        if current and used + sep + size > limit:
            groups.append(current)
            current, used = [], fixed
        used += (sep if current else 0) + size
        current.append(key)
    if current:
        groups.append(current)
    links = []
    for number, group in enumerate(groups, start=1):
        query = search_query(group, narrowing)
        links.append(GmailLink(number=number, query=query, url=search_url(query, account), senders=tuple(group)))
    return LinkSet(links=tuple(links), left_out=tuple(left_out))


def split_terms(value: str) -> list[str]:
    """The terms of `a OR "b c" OR d` (as `from:(…)` or a filter's `from` holds them), quotes kept."""
    terms: list[str] = []
    for piece in re.findall(r'"[^"]*"|[^\s"]+', value):
        if piece != "OR":
            terms.append(piece)
    return terms
