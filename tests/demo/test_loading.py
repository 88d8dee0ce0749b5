"""The demo's bulk load (regdesk.demo.loading): what it sets aside while the rows are written
(the documents' triggers, the secondary indexes, SQLite's small page cache) comes back exactly
as it was, whether the demo succeeds or fails, and the documents it renders are those the
declarations render from the tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.pool import StaticPool

from regdesk.audit.service import Actor
from regdesk.db import make_engine
from regdesk.demo import load_demo, loading, writer
from regdesk.models import DOCUMENTS
from tests.conftest import scratch_database_url

ACTOR = Actor(label="test:demo")
USERS, VOLUNTEERS = 300, 60


def schema(engine: Engine) -> dict[str, Any]:
    """Every index, trigger, trigger function and constraint, by name: its definition."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(
                "SELECT type || ' ' || name, tbl_name, sql FROM sqlite_master"
                " WHERE type IN ('index', 'trigger')"
            )
            return {name: (table, sql) for name, table, sql in rows}
        queries = (
            "SELECT 'index ' || indexname, indexdef FROM pg_indexes"
            " WHERE schemaname = current_schema()",
            "SELECT 'trigger ' || t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace",
            "SELECT 'function ' || proname, prosrc FROM pg_proc"
            " WHERE pronamespace = current_schema()::regnamespace",
            "SELECT 'constraint ' || conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE connamespace = current_schema()::regnamespace",
        )
        return {name: sql for query in queries for name, sql in connection.exec_driver_sql(query)}


def fail_at_registrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's writer fails once its rows reach the registrations (the last rows it makes)."""
    real_bulk_insert = writer.bulk_insert

    def bulk_insert(session: Any, table: Any, rows: list[dict[str, Any]]) -> None:
        if table.name == "registrations" and rows:
            raise RuntimeError("disk full")
        real_bulk_insert(session, table, rows)

    monkeypatch.setattr(writer, "bulk_insert", bulk_insert)


def test_the_indexes_and_triggers_come_back_exactly_as_they_were(engine: Engine) -> None:
    before = schema(engine)
    assert any(name.startswith("index ix_users_") for name in before)
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert schema(engine) == before


def test_a_failure_leaves_the_indexes_and_triggers_as_they_were(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = schema(engine)
    fail_at_registrations(monkeypatch)
    with pytest.raises(RuntimeError, match="disk full"):
        load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert schema(engine) == before


def test_the_rows_are_written_without_the_secondary_indexes(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each index no constraint stands behind is made once over the rows, not kept up to date
    row by row (lower(username), lower(email)... of every user)."""
    with engine.connect() as connection:
        indexed = loading.secondary_indexes(connection, writer.TABLES)
    assert {"ix_users_last_name_lower", "ix_orders_user_id"} <= {name for name, _ in indexed}
    seen: list[list[tuple[str, str]]] = []
    real_bulk_insert = writer.bulk_insert

    def bulk_insert(session: Any, table: Any, rows: list[dict[str, Any]]) -> None:
        seen.append(loading.secondary_indexes(session.connection(), writer.TABLES))
        real_bulk_insert(session, table, rows)

    monkeypatch.setattr(writer, "bulk_insert", bulk_insert)
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert seen
    assert all(found == [] for found in seen)


@pytest.fixture
def one_connection(tmp_path: Path) -> Iterator[Engine]:
    """A migrated SQLite database behind one connection, whose settings the test can watch."""
    with scratch_database_url("sqlite", tmp_path, migrated=True) as url:
        engine = make_engine(url, poolclass=StaticPool)
        yield engine
        engine.dispose()


def cache_size(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.exec_driver_sql("PRAGMA cache_size").scalar_one())


@pytest.mark.parametrize("fails", [False, True], ids=["success", "failure"])
def test_sqlites_page_cache_is_raised_for_the_load_and_set_back_after(
    one_connection: Engine, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    before = cache_size(one_connection)
    assert before > -loading.CACHE_MB * 1024  # SQLite's default: 2 MB (-2000 KiB)
    during: list[int] = []
    real_bulk_insert = writer.bulk_insert

    def bulk_insert(session: Any, table: Any, rows: list[dict[str, Any]]) -> None:
        during.append(session.connection().exec_driver_sql("PRAGMA cache_size").scalar_one())
        real_bulk_insert(session, table, rows)

    monkeypatch.setattr(writer, "bulk_insert", bulk_insert)
    if fails:
        fail_at_registrations(monkeypatch)
        with pytest.raises(RuntimeError, match="disk full"):
            load_demo(one_connection, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    else:
        load_demo(one_connection, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    assert set(during) == {-loading.CACHE_MB * 1024}
    assert cache_size(one_connection) == before


def test_every_document_stored_is_what_its_declaration_renders_from_the_tables(
    engine: Engine,
) -> None:
    """The demo renders every record in one pass per kind (documents.refresh.render_all), not
    through the queue: the bodies are still exactly the declarations' renderings."""
    load_demo(engine, users=USERS, volunteers=VOLUNTEERS, actor=ACTOR)
    with engine.connect() as connection:
        for document in DOCUMENTS:
            table = document.table
            stored = dict(connection.execute(select(table.c[document.key], table.c.body)).all())
            records = connection.exec_driver_sql(f"SELECT id FROM {document.records}").scalars()
            assert set(stored) == set(records) != set(), document.kind
            assert stored == document.render(connection, list(stored)), document.kind
