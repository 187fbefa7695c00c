"""CSV cells made safe to open in a spreadsheet: a text cell that a spreadsheet would read as a formula is written
as text. Pure functions, shared by the viewer's `export.csv` and `gmail-stats export --format csv`.

The rule is OWASP's (https://owasp.org/www-community/attacks/CSV_Injection): a cell starting with `=`, `+`, `-`,
`@`, a tab or a carriage return gets a single quote in front, which spreadsheets show as text and never evaluate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# OWASP's list: formula starts (=, +, -, @) and the two controls some spreadsheets skip before one (tab, CR).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: object) -> object:
    """`value` with a leading `'` when it is text that would start a formula; numbers and other text unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def neutralise_row(values: Iterable[object]) -> list[object]:
    return [neutralise_cell(value) for value in values]


def neutralise_record(record: Mapping[str, object]) -> dict[str, object]:
    return {key: neutralise_cell(value) for key, value in record.items()}
