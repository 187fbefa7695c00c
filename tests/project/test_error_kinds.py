"""One list of error kinds: the page's remedies and docs/api.md cover it, and Python names kinds only through it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.errors import RETRY_WARNING_PREFIX, RUN_ERROR_KINDS, ErrorKind
from viewer.web.run_api import is_retrying

ROOT = Path(__file__).resolve().parents[2]


def _remedy_keys() -> set[str]:
    """Keys of the page's `REMEDIES` object, wherever the page's scripts define it."""
    keys: set[str] = set()
    for script in (ROOT / "viewer" / "static").rglob("*.js"):
        text = script.read_text()
        for match in re.finditer(r"REMEDIES\s*=\s*\{", text):
            depth, end = 0, match.end() - 1
            for end in range(match.end() - 1, len(text)):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
            body = text[match.end() : end]
            keys |= set(re.findall(r"^\s*[\"']?([a-z_]+)[\"']?\s*:", body, re.MULTILINE))
    return keys


def test_the_page_has_a_remedy_for_every_run_error_kind() -> None:
    keys = _remedy_keys()
    assert keys, "no REMEDIES object found in viewer/static"
    assert {str(k) for k in RUN_ERROR_KINDS} <= keys
    assert keys <= {str(k) for k in ErrorKind}, "a remedy for a kind that does not exist"


def test_the_docs_list_every_kind() -> None:
    docs = (ROOT / "docs" / "api.md").read_text()
    table = docs[docs.index("## Error kinds") :]
    listed = set(re.findall(r"`([a-z_]+)`", table))
    assert {str(k) for k in ErrorKind} <= listed


@pytest.mark.parametrize("folder", ["shared", "ingester", "viewer"])
def test_python_names_kinds_through_the_enum(folder: str) -> None:
    quoted = "|".join(re.escape(str(k)) for k in ErrorKind)
    bare = re.compile(rf"(kind\s*[=:]\s*|ApiError\(\d+,\s*|return \d+,\s*|error_body\()\"({quoted})\"")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line) and not line.lstrip().startswith(('"""', "#"))
    ]
    assert offenders == []


def test_retrying_comes_from_the_marked_warning() -> None:
    marked = f"{RETRY_WARNING_PREFIX} attempt 1 in 2.0 s after messages.get: 429"
    assert is_retrying("running", ["earlier", marked])
    assert not is_retrying("running", [marked, "rate limit mentioned in prose"])
    assert not is_retrying("failed", [marked])
    assert not is_retrying("running", [])
