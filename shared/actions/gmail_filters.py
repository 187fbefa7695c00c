"""Gmail filters files: the Atom XML that Gmail's Settings → Filters → "Import filters" reads (and Export writes).

Pure functions, no I/O. The property names are Gmail's own, as its export writes them and as gmailctl and KDE's
FilterImporterGmail read and write them (`from`, `label`, `shouldArchive`, `shouldMarkAsRead`, `shouldTrash`,
`shouldNeverSpam`). Senders are packed into as few filters as the criteria limit allows; `read_filters` parses
a file back, which is how the tests check that a file names each sender exactly once.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.actions.gmail_search import search_term, searchable, split_terms
from shared.errors import UsageError

ATOM = "http://www.w3.org/2005/Atom"
APPS = "http://schemas.google.com/apps/2006"
# Gmail refuses (or will not let you edit) a filter whose criteria pass about 1,500 characters, as its users and
# gmailctl's report; we stop each filter's `from` at 1,000 to stay well clear of it.
CRITERIA_LIMIT = 1000
# Gmail keeps at most 1,000 filters per account (its help on creating filters); a file needing more is
# refused rather than half-imported.
MAX_FILTERS = 1000
MAX_LABEL = 225  # Gmail's label name limit
_OR = " OR "
_BAD_LABEL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class FilterActions:
    """What each filter does to matching mail; at least one is required."""

    archive: bool = False  # skip the inbox
    mark_read: bool = False
    trash: bool = False
    never_spam: bool = False
    label: str | None = None

    def properties(self) -> list[tuple[str, str]]:
        props: list[tuple[str, str]] = []
        if self.label:
            props.append(("label", self.label))
        for name, on in (
            ("shouldArchive", self.archive),
            ("shouldMarkAsRead", self.mark_read),
            ("shouldTrash", self.trash),
            ("shouldNeverSpam", self.never_spam),
        ):
            if on:
                props.append((name, "true"))
        return props


def check_actions(actions: FilterActions) -> FilterActions:
    """The actions with the label trimmed; a `UsageError` saying what to change when Gmail would refuse them."""
    label = (actions.label or "").strip() or None
    if label is not None and (len(label) > MAX_LABEL or _BAD_LABEL.search(label)):
        raise UsageError(f"the label must be 1 to {MAX_LABEL} printable characters")
    checked = FilterActions(
        archive=actions.archive,
        mark_read=actions.mark_read,
        trash=actions.trash,
        never_spam=actions.never_spam,
        label=label,
    )
    if not checked.properties():
        raise UsageError("choose at least one filter action: archive, mark read, label, delete or never spam")
    return checked


def group_criteria(senders: Iterable[str], *, limit: int = CRITERIA_LIMIT) -> tuple[list[str], list[str]]:
    """Each distinct sender once, as `from` values of at most `limit` characters; and the senders left out.

    A sender is left out when it is not `searchable` or alone longer than `limit` (no filter could hold it).
    """
    values: list[str] = []
    left_out: list[str] = []
    seen: set[str] = set()
    current: list[str] = []
    used = 0
    for sender in senders:
        key = sender.strip()
        if key in seen:
            continue
        seen.add(key)
        term = search_term(key)
        if not searchable(key) or len(term) > limit:
            left_out.append(sender)
            continue
        if current and used + len(_OR) + len(term) > limit:
            values.append(_OR.join(current))
            current, used = [], 0
        used += (len(_OR) if current else 0) + len(term)
        current.append(term)
    if current:
        values.append(_OR.join(current))
    return values, left_out


@dataclass(frozen=True, slots=True)
class FiltersFile:
    xml: str
    filters: int
    senders: int
    left_out: tuple[str, ...]


def filters_file(
    senders: Iterable[str], actions: FilterActions, *, now: datetime, author: str | None = None
) -> FiltersFile:
    """The import file; a `UsageError` when the actions are invalid, nothing is selected or it needs too many."""
    actions = check_actions(actions)
    values, left_out = group_criteria(senders)
    if not values:
        raise UsageError("no sender to write a filter for; select at least one sender with an address")
    if len(values) > MAX_FILTERS:
        raise UsageError(
            f"these senders need {len(values):,} filters and Gmail keeps at most {MAX_FILTERS:,}; "
            "select fewer senders, or their domains"
        )
    ET.register_namespace("", ATOM)
    ET.register_namespace("apps", APPS)
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    feed = ET.Element(f"{{{ATOM}}}feed")
    ET.SubElement(feed, f"{{{ATOM}}}title").text = "Mail Filters"
    ET.SubElement(feed, f"{{{ATOM}}}id").text = "tag:mail.google.com,2008:filters:"
    ET.SubElement(feed, f"{{{ATOM}}}updated").text = stamp
    who = ET.SubElement(feed, f"{{{ATOM}}}author")
    ET.SubElement(who, f"{{{ATOM}}}name").text = "gmail-stats"
    if author:
        ET.SubElement(who, f"{{{ATOM}}}email").text = author
    for value in values:
        entry = ET.SubElement(feed, f"{{{ATOM}}}entry")
        ET.SubElement(entry, f"{{{ATOM}}}category", {"term": "filter"})
        ET.SubElement(entry, f"{{{ATOM}}}title").text = "Mail Filter"
        ET.SubElement(entry, f"{{{ATOM}}}updated").text = stamp
        ET.SubElement(entry, f"{{{ATOM}}}content")
        # ElementTree escapes &, <, > and quotes in attribute values; search_term keeps control characters out.
        for name, prop in [("from", value), *actions.properties()]:
            ET.SubElement(entry, f"{{{APPS}}}property", {"name": name, "value": prop})
    ET.indent(feed)
    text = "<?xml version='1.0' encoding='UTF-8'?>\n" + ET.tostring(feed, encoding="unicode") + "\n"
    count = sum(len(split_terms(v)) for v in values)
    return FiltersFile(xml=text, filters=len(values), senders=count, left_out=tuple(left_out))


@dataclass(frozen=True, slots=True)
class ParsedFilter:
    terms: tuple[str, ...]  # the `from` terms, as search_term wrote them
    actions: FilterActions


def read_filters(text: str) -> list[ParsedFilter]:
    """The filters of a Gmail filters file (ours or Gmail's export): from-terms and the actions above."""
    root = ET.fromstring(text)
    parsed: list[ParsedFilter] = []
    for entry in root.iter(f"{{{ATOM}}}entry"):
        props = {p.get("name", ""): p.get("value", "") for p in entry.iter(f"{{{APPS}}}property")}
        parsed.append(
            ParsedFilter(
                terms=tuple(split_terms(props.get("from", ""))),
                actions=FilterActions(
                    archive=props.get("shouldArchive") == "true",
                    mark_read=props.get("shouldMarkAsRead") == "true",
                    trash=props.get("shouldTrash") == "true",
                    never_spam=props.get("shouldNeverSpam") == "true",
                    label=props.get("label"),
                ),
            )
        )
    return parsed
