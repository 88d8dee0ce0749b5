"""The tests' own PostgreSQL schemas (tests/databases.py): a schema is handed to the next test
empty and as migrated, and never after a test changed what it is made of."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import literal_column, select, text

from regdesk.db import make_engine
from tests.conftest import PAGES, POSTGRES_ENV, postgres_base_url
from tests.databases import PostgresSchemas, autocommit, with_schema


@pytest.fixture
def pool() -> Iterator[tuple[PostgresSchemas, str]]:
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set: the PostgreSQL schemas are not in use")
    schemas = PostgresSchemas(base)
    yield schemas, base
    schemas.close()


def run(base: str, schema: str, *statements: str) -> list[object]:
    engine = make_engine(with_schema(base, schema))
    try:
        with engine.begin() as connection:
            results = [connection.execute(text(s)) for s in statements]
            return [r.scalar() if r.returns_rows else None for r in results]
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_schema_is_handed_on_empty_and_migrated(pool: tuple[PostgresSchemas, str]) -> None:
    schemas, base = pool
    first = schemas.migrated()
    run(
        base,
        first,
        "INSERT INTO departments (name, email, publicly_visible, created_at, updated_at)"
        " VALUES ('Hotel', 'hotel@example.org', true, now(), now()) RETURNING id",
    )
    schemas.done(first, migrated=True)

    second = schemas.migrated()
    assert second == first
    left, version, next_id = run(
        base,
        second,
        "SELECT count(*) FROM departments",
        "SELECT version_num FROM alembic_version",
        "INSERT INTO departments (name, email, publicly_visible, created_at, updated_at)"
        " VALUES ('Hotel', 'hotel@example.org', true, now(), now()) RETURNING id",
    )
    assert (left, next_id) == (0, 1)  # no rows, and ids start again
    assert version == run(base, schemas.migrated(), "SELECT version_num FROM alembic_version")[0]


@pytest.mark.postgres
@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE extra (id integer)",
        "ALTER TABLE departments ADD COLUMN extra integer",
        "DROP INDEX ix_orders_user_id",
        "ALTER TABLE users DISABLE TRIGGER ALL",
        "CREATE TYPE mood AS ENUM ('calm')",
        # Not the catalogs: the revision row that emptying keeps (a newer release's schema).
        "UPDATE alembic_version SET version_num = '9999'",
    ],
)
def test_a_schema_a_test_changed_is_dropped_not_handed_on(
    pool: tuple[PostgresSchemas, str], ddl: str
) -> None:
    schemas, base = pool
    changed = schemas.migrated()
    run(base, changed, ddl)
    schemas.done(changed, migrated=True)
    assert schemas.migrated() != changed
    assert run(
        base, "public", f"SELECT count(*) FROM pg_namespace WHERE nspname = '{changed}'"
    ) == [0]


def test_every_page_test_named_for_sqlite_only_exists() -> None:
    """tests/conftest.py PAGES names files and folders: a renamed one would quietly put its
    tests back on PostgreSQL, or a new data-layer test under an old page path off it."""
    root = Path(__file__).resolve().parents[1]
    assert [page for page in PAGES if not (root / page).exists()] == []


def test_a_statement_is_compiled_once_for_every_engine_of_a_kind(database_url: str) -> None:
    """`shared_compiled_sql` (tests/conftest.py): a second engine on the same kind of database
    finds the statement the first compiled."""
    engines = [make_engine(database_url), make_engine(database_url)]
    unusual = select(literal_column("1").label(f"compiled_once_{uuid.uuid4().hex}"))
    try:
        hits = []
        for engine in engines:
            with engine.connect() as connection:
                result = connection.execute(unusual)
                hits.append(result.context.cache_hit == engine.dialect.CACHE_HIT)
    finally:
        for engine in engines:
            engine.dispose()
    assert hits == [False, True]


# --- connections kept between tests (tests/databases.py KeptConnections) ----------------------

LOCK = 7_340_981  # a session advisory lock no other test takes


def _session(url: str, *statements: str) -> list[object]:
    """`statements` on a connection of a new engine on `url`, closed afterwards as a test's
    engine is: the first statement's answer, then the others'."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            answers = [connection.exec_driver_sql(s) for s in statements]
            values = [a.scalar() if a.returns_rows else None for a in answers]
            connection.commit()
            return values
    finally:
        engine.dispose()


@pytest.fixture
def migrated(pool: tuple[PostgresSchemas, str]) -> tuple[str, str]:
    """The server's URL, and a migrated schema's."""
    schemas, base = pool
    return base, with_schema(base, schemas.migrated())


@pytest.mark.postgres
def test_a_kept_connection_comes_to_the_next_engine_as_a_new_session_would(
    migrated: tuple[str, str],
) -> None:
    base, url = migrated
    (backend, *_) = _session(
        url,
        "SELECT pg_backend_pid()",
        "SET statement_timeout = '1234ms'",
        f"SELECT pg_advisory_lock({LOCK})",
        "CREATE TEMPORARY TABLE left_behind (id integer)",
        "PREPARE left_behind_plan AS SELECT 1",
    )
    again, timeout, temporary, prepared = _session(
        url,
        "SELECT pg_backend_pid()",
        "SHOW statement_timeout",
        "SELECT count(*) FROM pg_class WHERE relname = 'left_behind'",
        "SELECT count(*) FROM pg_prepared_statements WHERE name = 'left_behind_plan'",
    )
    assert again == backend  # the same session, kept
    assert (timeout, temporary, prepared) == ("0", 0, 0)
    # Its session lock was let go: another session takes it at once.
    assert run(base, "public", f"SELECT pg_try_advisory_lock({LOCK})") == [True]


@pytest.mark.postgres
def test_what_psycopg_prepared_on_a_kept_connection_runs_again_after_each_handing_on(
    migrated: tuple[str, str],
) -> None:
    """psycopg prepares a statement the fifth time a connection runs it. The reset between
    tests forgets it on the server, and psycopg must forget it too, each time. Each engine here
    runs a statement on two connections, once, then six times, then six times again, committing
    each time: psycopg itself forgets its statements when it rolls a transaction back (an
    engine's first connection is rolled back after SQLAlchemy reads the server's settings),
    so it is the second connection, given back without a rollback, that depends on the reset."""
    _, url = migrated
    statement = "SELECT count(*) FROM users WHERE id > -1"
    sessions = []
    for runs in (1, 6, 6):
        engine = make_engine(url)
        try:
            with engine.connect() as first, engine.connect() as second:
                for connection in (first, second):
                    counts = [connection.exec_driver_sql(statement).scalar() for _ in range(runs)]
                    assert counts == [0] * runs
                    connection.commit()
                    sessions.append(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar())
                    connection.commit()
        finally:
            engine.dispose()
    assert len(set(sessions)) == 2  # the same two sessions, kept and handed on each time


@pytest.mark.postgres
def test_a_kept_connection_whose_backend_ended_is_not_handed_on(migrated: tuple[str, str]) -> None:
    base, url = migrated
    (backend,) = _session(url, "SELECT pg_backend_pid()")
    assert run(base, "public", f"SELECT pg_terminate_backend({backend}, 5000)") == [True]
    (replacement, users) = _session(url, "SELECT pg_backend_pid()", "SELECT count(*) FROM users")
    assert replacement != backend
    assert users == 0


@pytest.mark.postgres
def test_kept_connections_serve_an_engine_that_asks_for_autocommit(
    migrated: tuple[str, str],
) -> None:
    """They are handed on outside any transaction, as new ones are: psycopg refuses to switch
    a connection in a transaction to autocommit. (An engine's first connection is rolled back
    after SQLAlchemy reads the server's settings through it; its second is not.)"""
    _, url = migrated
    before = make_engine(url)
    try:
        with before.connect() as first, before.connect() as second:
            backends = {
                c.exec_driver_sql("SELECT pg_backend_pid()").scalar() for c in (first, second)
            }
    finally:
        before.dispose()
    engine = autocommit(url)
    try:
        with engine.connect() as first, engine.connect() as second:
            again = {c.exec_driver_sql("SELECT pg_backend_pid()").scalar() for c in (first, second)}
            for connection in (first, second):  # VACUUM runs only outside a transaction
                connection.exec_driver_sql("VACUUM departments")
    finally:
        engine.dispose()
    assert again == backends
