"""Writing many new rows fast, by the driver's own bulk path: COPY on PostgreSQL,
executemany on SQLite.

SQLAlchemy's executemany spends more time on its per-row bookkeeping than the database spends
on the rows: with it, 100,000 demo users took 30 s on PostgreSQL; with COPY, 15 s. Each value
still goes through its column type's bind processor, so rows are stored exactly as the ORM
would store them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from functools import lru_cache
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, Dialect, Table, insert
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

CHUNK_ROWS = 10_000


def bulk_insert(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert `rows` (dicts with the same keys) in the session's transaction."""
    if not rows:
        return
    connection = session.connection()
    driver_connection = connection.connection.driver_connection
    assert driver_connection is not None, "the session's connection is open"
    with closing(driver_connection.cursor()) as cursor:
        if connection.dialect.name == "postgresql":
            _copy(cursor, connection.dialect, table, rows)
        else:
            _insert_many(cursor, connection.dialect, table, rows)


def _copy(cursor: Any, dialect: Dialect, table: Table, rows: list[dict[str, Any]]) -> None:
    keys = list(rows[0])
    quote = dialect.identifier_preparer.quote
    target = dialect.identifier_preparer.format_table(table)
    with cursor.copy(f"COPY {target} ({', '.join(map(quote, keys))}) FROM STDIN") as copy:
        for record in _records(dialect, table, rows, keys):
            copy.write_row(record)


def _insert_many(cursor: Any, dialect: Dialect, table: Table, rows: list[dict[str, Any]]) -> None:
    sql, keys = _insert_statement(table, dialect, tuple(rows[0]))
    records = _records(dialect, table, rows, list(keys))
    for start in range(0, len(records), CHUNK_ROWS):
        cursor.executemany(sql, records[start : start + CHUNK_ROWS])


@lru_cache(maxsize=256)  # bounded: each engine has a dialect of its own
def _insert_statement(
    table: Table, dialect: Dialect, keys: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """The INSERT of these columns and the order it takes them in, compiled once (a demo writes
    the same few hundred times)."""
    statement = insert(table).compile(dialect=dialect, column_keys=list(keys))
    return str(statement), tuple(statement.positiontup or ())


def _records(
    dialect: Dialect, table: Table, rows: list[dict[str, Any]], keys: list[str]
) -> list[tuple[Any, ...]]:
    """The rows as tuples of `keys`, each value as SQLAlchemy would hand it to the driver:
    through its column type's bind processor (naive UTC timestamps, JSON text, ...)."""
    columns = []
    for key in keys:
        values = list(map(itemgetter(key), rows))
        processor = _processor(dialect, table.c[key].type)
        columns.append(values if processor is None else list(map(processor, values)))
    return list(zip(*columns, strict=True))


def _processor(dialect: Dialect, column_type: TypeEngine[Any]) -> Callable[[Any], Any] | None:
    if dialect.name == "postgresql" and isinstance(column_type, JSON):
        return json.dumps  # COPY reads JSON text; psycopg's Json wrapper is slower
    processor: Callable[[Any], Any] | None
    processor = column_type.dialect_impl(dialect).bind_processor(dialect)
    return processor
