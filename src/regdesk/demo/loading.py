"""The database's side of the demo's bulk load: what would make each row cost more than writing
it is set aside before the rows and put back after them, in the demo's one transaction.

- The record documents' triggers: each would queue its record once per row written (on
  PostgreSQL a plpgsql call per row, most of COPY's time; on SQLite a third of the inserts').
  They are made again from their declarations, and every record rendered in one pass per kind
  (`documents.refresh.render_all`), once the tables have their indexes and, on PostgreSQL,
  statistics (planning for empty tables, it would join each batch by scanning whole tables).
- The tables' secondary indexes (those no constraint stands behind: users by lower(username),
  orders by user, registrations by badge name...): maintained row by row, each row is one more
  B-tree descent per index, into pages all over the index (usernames and e-mail addresses come
  in no order). Made again after the rows from the very definitions the database gave for
  them, each in one sorted pass; a unique one checks every row as it is made, so a duplicate
  still fails the demo.
- SQLite's page cache of the demo's connection (2 MB by default), raised to `CACHE_MB` while it
  writes and reads back its rows: the indexes behind constraints (order numbers and ticket
  codes are random) and the records rendered after the rows (registrations joined with their
  users) stop going to the file for pages they just left. Set back after, in any case.

Schema changes are transactional on both databases: a failure leaves the triggers and the
indexes as they were, with the tables as empty. Where the tables are not the demo's to alter
(another owner, on PostgreSQL), the rows are written with everything in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from regdesk.documents import triggers
from regdesk.documents.refresh import render_all
from regdesk.models import DOCUMENTS

CACHE_MB = 128  # at most, whatever the demo's size: a million users' rows stream through it


@contextmanager
def bulk_load(session: Session, tables: Iterable[str]) -> Iterator[None]:
    """Write the demo's rows into `tables` inside this block, in the session's transaction."""
    connection = session.connection()
    dialect = connection.dialect.name
    tables = sorted(tables)
    indexes = secondary_indexes(connection, tables)
    try:
        with session.begin_nested():
            triggers.uninstall(connection.exec_driver_sql, dialect, DOCUMENTS, drop_tables=False)
            for name, _definition in indexes:
                connection.exec_driver_sql(f"DROP INDEX {name}")
    except DBAPIError:
        yield  # not the tables' owner: row by row, and the triggers queue what the commit renders
        _analyze(connection, tables)
        return
    with _page_cache(connection, CACHE_MB):
        yield
        for _name, definition in indexes:
            connection.exec_driver_sql(definition)
        triggers.install(connection.exec_driver_sql, dialect, DOCUMENTS, create_tables=False)
        _analyze(connection, tables)
        render_all(session, DOCUMENTS)


def secondary_indexes(connection: Connection, tables: Iterable[str]) -> list[tuple[str, str]]:
    """(name, definition) of the indexes of these tables that no constraint stands behind, as
    the database would make them again, by name."""
    names = sorted(tables)
    if connection.dialect.name == "sqlite":
        query = text(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            " AND tbl_name IN :tables ORDER BY name"
        ).bindparams(bindparam("tables", expanding=True))
    else:
        query = text(
            "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x"
            " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
            " WHERE t.relname IN :tables AND t.relnamespace = current_schema()::regnamespace"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)"
            " ORDER BY i.relname"
        ).bindparams(bindparam("tables", expanding=True))
    return [(name, sql) for name, sql in connection.execute(query, {"tables": names})]


def _analyze(connection: Connection, tables: list[str]) -> None:
    """PostgreSQL: statistics of the rows just written, for the plans of the records rendered
    next (SQLite plans these joins by their keys without them)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"ANALYZE {', '.join(tables)}")


@contextmanager
def _page_cache(connection: Connection, megabytes: int) -> Iterator[None]:
    """SQLite: this connection's page cache at `megabytes` inside the block (a negative
    cache_size is in KiB), as it was after it."""
    if connection.dialect.name != "sqlite":
        yield
        return
    before = connection.exec_driver_sql("PRAGMA cache_size").scalar_one()
    connection.exec_driver_sql(f"PRAGMA cache_size = {-megabytes * 1024}")
    try:
        yield
    finally:
        connection.exec_driver_sql(f"PRAGMA cache_size = {int(before)}")
