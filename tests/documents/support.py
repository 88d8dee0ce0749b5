"""What the documents' tests share: the triggers a database holds, and those it should."""

from __future__ import annotations

from sqlalchemy import Engine, text

from regdesk.documents import triggers
from regdesk.models import DOCUMENTS


def installed(engine: Engine) -> dict[str, tuple[str, str | None]]:
    """Each documents trigger's name: its definition (SQLite) or its table and function body
    (PG). Others (the webhooks', migration 0015) are not the declarations' to make."""
    return {
        name: found for name, found in _installed(engine).items() if name.startswith("documents_")
    }


def _installed(engine: Engine) -> dict[str, tuple[str, str | None]]:
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.execute(
                text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            )
            return {name: (" ".join(sql.split()), None) for name, sql in rows}
        rows = connection.execute(
            text("""
                SELECT t.tgname, c.relname, p.prosrc
                FROM pg_trigger t
                JOIN pg_class c ON c.oid = t.tgrelid
                JOIN pg_proc p ON p.oid = t.tgfoid
                WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
            """)
        )
        return {name: (table, source) for name, table, source in rows}


def declared(engine: Engine) -> dict[str, tuple[str, str | None]]:
    """`installed` as the declarations say it should be."""
    dialect = engine.dialect.name
    expected = triggers.expected(dialect, DOCUMENTS)
    assert expected, "the declarations make no trigger"
    if dialect == "sqlite":
        return {t.name: (" ".join(t.sql.split()), None) for t in expected}
    return {t.name: (t.table, t.function) for t in expected}
