"""Writes the generated parts of reference.md beside it (settings and command-line flags) from the code itself.

`make docs` runs `python docs/reference.py`; tests/project/test_reference_docs.py runs it with `--check`, which
changes nothing and fails when the file and the code disagree. Only the sections between `<!-- generated:NAME -->` and
`<!-- /generated:NAME -->` are touched; the prose around them is hand-written.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from ingester.parser import build_parser as ingester_parser
from ingester.settings import IngesterSettings
from shared.settings import CommonSettings, shown_default
from viewer.__main__ import build_parser as viewer_parser
from viewer.settings import ViewerSettings

REFERENCE = Path(__file__).resolve().parent / "reference.md"
SETTINGS: dict[str, type[CommonSettings]] = {"ingester": IngesterSettings, "viewer": ViewerSettings}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:  # argparse has no public iterator over a parser's options
        hidden = action.help == argparse.SUPPRESS  # for launchers, not people
        if action.option_strings and not hidden and not isinstance(action, argparse._HelpAction):
            yield action


def _flags_by_setting() -> dict[str, set[str]]:
    """Setting name -> the flags that override it (`--db`, `--host` for `viewer_host`, ...)."""
    found: dict[str, set[str]] = {}
    parsers = [viewer_parser(), *_subcommands(ingester_parser()).values()]
    names = {name for settings in SETTINGS.values() for name in settings.model_fields}
    for parser in parsers:
        for action in _options(parser):
            for name in (action.dest, f"viewer_{action.dest}"):
                if name in names:
                    found.setdefault(name, set()).add(action.option_strings[0])
    return found


def settings_table() -> str:
    flags = _flags_by_setting()
    rows = ["| Variable | Flag | Default | Used by | Meaning |", "| --- | --- | --- | --- | --- |"]
    names = sorted({name for settings in SETTINGS.values() for name in settings.model_fields})
    for name in names:
        users = [service for service, settings in SETTINGS.items() if name in settings.model_fields]
        settings = SETTINGS[users[0]]
        description = settings.model_fields[name].description or ""
        flag = ", ".join(f"`{f}`" for f in sorted(flags.get(name, ())))
        default = f"`{shown_default(settings, name)}`"
        rows.append(
            f"| `GMAIL_STATS_{name.upper()}` | {flag} | {default} | {' and '.join(users)} | {_cell(description)} |"
        )
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| Option | Meaning |", "| --- | --- |"]
    for action in _options(parser):
        metavar = "" if action.nargs == 0 else f" {_metavar(action)}"
        if action.choices:
            metavar = " " + "\\|".join(str(choice) for choice in action.choices)
        names = ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)
        help_text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in help_text:
            help_text = f"{help_text} (default {action.default})".strip()
        rows.append(f"| {names} | {_cell(help_text)} |")
    return rows


def _metavar(action: argparse.Action) -> str:
    return action.metavar if isinstance(action.metavar, str) else action.dest.upper()


def cli_reference() -> str:
    parts: list[str] = []
    for name, parser in _subcommands(ingester_parser()).items():
        positionals = {_metavar(a): a.help or "" for a in parser._actions if not a.option_strings}
        usage = "".join(f" {metavar}" for metavar in positionals)
        parts += [f"#### `gmail-stats {name}{usage}`", "", _cell(parser.description or ""), ""]
        if positionals:
            parts += [*(f"- `{metavar}`: {_cell(text)}" for metavar, text in positionals.items()), ""]
        parts += [*_option_rows(parser), ""]
    viewer = viewer_parser()
    parts += ["#### `gmail-stats-viewer`", "", _cell(viewer.description or ""), "", *_option_rows(viewer)]
    return "\n".join(parts).rstrip()


GENERATORS: dict[str, Callable[[], str]] = {"settings": settings_table, "cli": cli_reference}


def _section(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{name} -->\n)(.*?)(<!-- /generated:{name} -->)", re.DOTALL)


def _fill(text: str, name: str, body: str) -> str:
    pattern = _section(name)
    if pattern.search(text) is None:
        raise ValueError(f"docs/reference.md has no generated:{name} section")
    return pattern.sub(lambda match: match.group(1) + body + "\n" + match.group(3), text)


def rendered(text: str) -> str:
    """`text` with every generated section replaced by what the code says now."""
    for name, generate in GENERATORS.items():
        text = _fill(text, name, generate())
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the generated sections of docs/reference.md.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when the file is out of date")
    check = parser.parse_args(argv).check
    current = REFERENCE.read_text(encoding="utf-8")
    wanted = rendered(current)
    if check:
        if wanted == current:
            return 0
        sys.stderr.write("docs/reference.md is out of date with the code: run `make docs`\n")
        return 1
    REFERENCE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
