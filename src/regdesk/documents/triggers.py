"""The triggers that keep record documents in step, made from their declarations.

For each `Stale` of a `Document`, on each operation it names: a trigger that deletes the
documents the changed row makes stale and queues them, in the same statement as the change.
SQLite: one trigger per operation, its body inline. PostgreSQL: one plpgsql function per
`Stale`, and a trigger per operation calling it. Names follow the declaration
(`documents_<kind>_<table>[_<operation>]`), so they can be dropped as they were made.

Migrations call `install` with the declarations they bring in, and `reinstall` with those
they change, and record each one's `fingerprint` in their `DECLARED` mapping (kind: print).
The tests compare the installed triggers with `expected`, and the newest migration's print of
each declaration with its print today, so a declaration changed without its migration fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sqlalchemy import Connection, text

from regdesk.documents.declarations import Document, Stale

Execute = Callable[[str], object]  # alembic's op.execute, or a connection's exec_driver_sql


@dataclass(frozen=True)
class Trigger:
    """One trigger as the database should hold it; `function` (PostgreSQL) is the body of the
    plpgsql function it calls (None on SQLite)."""

    name: str
    table: str
    operation: str
    sql: str
    function: str | None = None


def install(
    execute: Execute, dialect: str, documents: Iterable[Document], *, create_tables: bool = True
) -> None:
    """Create what the documents need: their tables and their triggers, and a queue entry for
    every record already there (rendered by the next write). With `create_tables` False (the
    tables and their documents are there: the triggers are being replaced), the triggers only.
    """
    for document in documents:
        if create_tables:
            execute(
                f"CREATE TABLE {document.table.name} ("
                f"{document.key} INTEGER NOT NULL, body TEXT NOT NULL, "
                f"CONSTRAINT pk_{document.table.name} PRIMARY KEY ({document.key}), "
                f"CONSTRAINT fk_{document.table.name}_{document.key}_{document.records} "
                f"FOREIGN KEY({document.key}) REFERENCES {document.records} (id) "
                "ON DELETE CASCADE)"
            )
        for statement in _created(dialect, document):
            execute(statement)
        if create_tables:
            execute(
                "INSERT INTO document_queue (kind, key) "  # noqa: S608 (names are ours)
                f"SELECT '{document.kind}', id FROM {document.records}"
            )


def uninstall(
    execute: Execute, dialect: str, documents: Iterable[Document], *, drop_tables: bool = True
) -> None:
    """Drop what `install` made (with `drop_tables` False, the triggers only)."""
    for document in documents:
        for trigger in expected(dialect, [document]):
            on = f" ON {trigger.table}" if dialect == "postgresql" else ""
            execute(f"DROP TRIGGER {trigger.name}{on}")
        if dialect == "postgresql":
            for stale in document.stale:
                execute(f"DROP FUNCTION {_name(document, stale)}()")
        if drop_tables:
            execute(f"DELETE FROM document_queue WHERE kind = '{document.kind}'")  # noqa: S608
            execute(f"DROP TABLE {document.table.name}")


def reinstall(connection: Connection, documents: Iterable[Document]) -> None:
    """Replace the triggers of documents whose declaration changed: every trigger (and
    function) of their kind found in the database goes, whatever it watched, then `install`
    makes today's, and every record is queued to be rendered again."""
    dialect = connection.dialect.name
    for document in documents:
        prefix = f"documents_{document.kind}_"
        if dialect == "postgresql":
            found = connection.execute(
                text(
                    "SELECT t.tgname, c.relname, p.proname FROM pg_trigger t"
                    " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
                    " WHERE NOT t.tgisinternal AND t.tgname LIKE :prefix"
                    " AND c.relnamespace = current_schema()::regnamespace"
                ),
                {"prefix": f"{prefix}%"},
            ).all()
            for name, table, _ in found:
                connection.exec_driver_sql(f"DROP TRIGGER {name} ON {table}")
            for function in sorted({function for _, _, function in found}):
                connection.exec_driver_sql(f"DROP FUNCTION {function}()")
        else:
            names = connection.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE :p"),
                {"p": f"{prefix}%"},
            ).scalars()
            for name in list(names):
                connection.exec_driver_sql(f"DROP TRIGGER {name}")
        install(connection.exec_driver_sql, dialect, [document], create_tables=False)
        connection.exec_driver_sql(
            "INSERT INTO document_queue (kind, key) "  # noqa: S608 (names are ours)
            f"SELECT '{document.kind}', id FROM {document.records}"
        )


def fingerprint(document: Document) -> str:
    """A short print of what `install` makes for the document on both databases."""
    made = [
        (trigger.sql, trigger.function or "")
        for dialect in ("sqlite", "postgresql")
        for trigger in expected(dialect, [document])
    ]
    return hashlib.sha256(repr((document.table.name, made)).encode()).hexdigest()[:16]


def expected(dialect: str, documents: Iterable[Document]) -> list[Trigger]:
    """Every trigger the documents need on this database (`sqlite` or `postgresql`)."""
    return [
        trigger
        for document in documents
        for stale in document.stale
        for trigger in _triggers(dialect, document, stale)
    ]


def _created(dialect: str, document: Document) -> Iterator[str]:
    for stale in document.stale:
        triggers = list(_triggers(dialect, document, stale))
        if dialect == "postgresql":
            yield (
                f"CREATE FUNCTION {_name(document, stale)}() RETURNS trigger LANGUAGE plpgsql "
                f"AS $${triggers[0].function}$$"
            )
        yield from (trigger.sql for trigger in triggers)


def _triggers(dialect: str, document: Document, stale: Stale) -> Iterator[Trigger]:
    return (_postgresql if dialect == "postgresql" else _sqlite)(document, stale)


def _name(document: Document, stale: Stale) -> str:
    return f"documents_{document.kind}_{stale.table}"


def _statements(document: Document, stale: Stale, row: str) -> list[str]:
    """Delete the stale documents and queue them, for the changed row named `row` (NEW, OLD)."""
    column, _, source = (
        stale.ids.replace("R.", f"{row}.").removeprefix("SELECT ").partition(" FROM ")
    )
    source = f" FROM {source}" if source else ""
    table, key = document.table.name, document.key
    # Names and SQL from the declarations, nothing from outside.
    return [
        f"DELETE FROM {table} WHERE {key} IN (SELECT {column}{source})",  # noqa: S608
        f"INSERT INTO document_queue (kind, key) SELECT '{document.kind}', {column}{source}",
    ]


def _changed(stale: Stale, different: str) -> str:
    return " OR ".join(f"OLD.{c} {different} NEW.{c}" for c in stale.columns)


_ROWS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}


def _sqlite(document: Document, stale: Stale) -> Iterator[Trigger]:
    for operation in stale.operations:
        name = f"{_name(document, stale)}_{operation.lower()}"
        when = (
            f" WHEN {_changed(stale, 'IS NOT')}" if operation == "UPDATE" and stale.columns else ""
        )
        body = "".join(
            f"  {statement};\n"
            for row in _ROWS[operation]
            for statement in _statements(document, stale, row)
        )
        sql = (
            f"CREATE TRIGGER {name} AFTER {operation} ON {stale.table} FOR EACH ROW{when}\n"
            f"BEGIN\n{body}END"
        )
        yield Trigger(name, stale.table, operation, sql)


def _postgresql(document: Document, stale: Stale) -> Iterator[Trigger]:
    function = _name(document, stale)
    branches = "".join(
        f"  IF TG_OP IN ({', '.join(repr(op) for op in ops)}) THEN\n"
        + "".join(f"    {statement};\n" for statement in _statements(document, stale, row))
        + "  END IF;\n"
        for row, ops in (("OLD", ("UPDATE", "DELETE")), ("NEW", ("INSERT", "UPDATE")))
    )
    body = f"\nBEGIN\n{branches}  RETURN NULL;\nEND\n"
    for operation in stale.operations:
        when = (
            f" WHEN ({_changed(stale, 'IS DISTINCT FROM')})"
            if operation == "UPDATE" and stale.columns
            else ""
        )
        sql = (
            f"CREATE TRIGGER {function}_{operation.lower()} AFTER {operation} ON {stale.table}"
            f" FOR EACH ROW{when} EXECUTE FUNCTION {function}()"
        )
        yield Trigger(f"{function}_{operation.lower()}", stale.table, operation, sql, body)
