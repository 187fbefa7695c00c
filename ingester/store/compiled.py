"""Core statements compiled once to the driver's SQL, for statements run thousands of times a second."""

from __future__ import annotations

from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler


def driver_sql(statement: ClauseElement, columns: tuple[str, ...]) -> str:
    """Compiles a Core statement to qmark SQL whose parameters are exactly `columns`, in that order.

    The hot paths then run plain `exec_driver_sql` on tuples: building and compiling Core statements per batch
    costs more than the writes themselves at tens of thousands of messages a second. Constants must be
    `literal_column`s, or they would become parameters too (the check below catches that at first use).
    """
    compiled = statement.compile(dialect=sqlite.dialect(paramstyle="qmark"))
    assert isinstance(compiled, SQLCompiler)
    if tuple(compiled.positiontup or ()) != columns:
        raise ValueError(f"statement parameters {compiled.positiontup} are not {columns}")
    return str(compiled)
