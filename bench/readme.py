"""Writes a benchmark's measured table into bench/README.md between its own markers."""

from __future__ import annotations

from pathlib import Path


def replace_between_markers(readme: Path, name: str, text: str) -> None:
    """Replaces what stands between `<!-- bench-NAME:start -->` and `<!-- bench-NAME:end -->` with `text`."""
    start, end = f"<!-- bench-{name}:start -->", f"<!-- bench-{name}:end -->"
    head, found_start, rest = readme.read_text().partition(start)
    _, found_end, tail = rest.partition(end)
    if not (found_start and found_end):
        raise SystemExit(f"{readme}: markers {start} … {end} not found")
    readme.write_text(f"{head}{start}\n{text}{end}{tail}")
