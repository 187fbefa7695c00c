"""Lists of any length bound into SQL as one JSON array parameter (hidden senders, matching ids).

SQLite caps bound parameters (32,766), and a list of a thousand hidden senders should not become a thousand of
them; `IN (SELECT value FROM json_each(?))` is still one index lookup per member. Builds expressions only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, func, select


def in_values(column: ColumnElement[Any], values: Iterable[str | int]) -> ColumnElement[bool]:
    """`column IN values`, whatever the number of values."""
    return in_json(column, json.dumps(list(values)))


def in_json(column: ColumnElement[Any], array: str) -> ColumnElement[bool]:
    """`column IN` the members of a JSON array given as text (e.g. one built by SQLite's `json_group_array`)."""
    return column.in_(select(func.json_each(array).table_valued("value").c.value))
