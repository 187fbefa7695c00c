"""Lists of any length bound into SQL as one JSON array parameter (hidden senders, matching ids), and `LIKE` terms.

SQLite caps bound parameters (32,766), and a list of a thousand hidden senders should not become a thousand of
them; `IN (SELECT value FROM json_each(?))` is still one index lookup per member. SQLite's JSON reads a string only
up to a NUL, though, and a sender can hold one (a stranger's From header), so such values are written into the
statement as hex text literals instead (no parameter, so no cap). Builds expressions only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, func, literal_column, or_, select


def in_values(column: ColumnElement[Any], values: Iterable[str | int]) -> ColumnElement[bool]:
    """`column IN values`, whatever the number of values."""
    listed = list(values)
    with_nul = [v for v in listed if isinstance(v, str) and "\x00" in v]
    in_json = column.in_(
        select(func.json_each(json.dumps([v for v in listed if v not in with_nul])).table_valued("value").c.value)
    )
    if not with_nul:
        return in_json
    # As SQLite stores text (a lone surrogate cannot be stored, so its bytes match nothing).
    return or_(
        in_json,
        column.in_([literal_column(f"CAST(X'{v.encode('utf-8', 'surrogatepass').hex()}' AS TEXT)") for v in with_nul]),
    )


def contains(column: ColumnElement[str], q: str) -> ColumnElement[bool]:
    """`q` anywhere in `column`, as `LIKE` means it (ASCII letters in either case), its wildcards escaped."""
    pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return column.like(pattern, escape="\\")
