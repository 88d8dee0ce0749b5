"""Migrated databases for tests, without running the migrations for every test.

A test process migrates once and copies the result for each test that asks:

- SQLite: a template file, migrated once, copied for each test.
- PostgreSQL: the statements the migrations sent, recorded once and sent again into a new
  schema; and a schema a test has finished with is emptied (its rows deleted, its sequences
  restarted) and handed to the next test, unless the test changed the schema itself (a table,
  column, index, constraint, function or trigger made, altered or dropped: the catalog's
  rows for the schema say so), in which case it is dropped. `CREATE DATABASE ... TEMPLATE`
  was measured and was the slowest (a quarter of a second a copy: the server writes the new
  database's files through to disk), replaying a tenth, emptying a schema a millisecond.

Schemas are reached through the URL's search_path, so subprocesses see the same one.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event, make_url, text

from regdesk.db import make_engine
from regdesk.migrations.revisions import head_revision
from regdesk.migrations.runner import upgrade

# The catalogs a schema's tables, columns, indexes, constraints, functions and triggers live in,
# and the planner's statistics (every import ANALYZEs what it loaded).
CATALOGS = (
    "pg_statistic",
    "pg_class",
    "pg_attribute",
    "pg_attrdef",
    "pg_type",
    "pg_depend",
    "pg_index",
    "pg_constraint",
    "pg_trigger",
    "pg_proc",
    "pg_sequence",
    "pg_namespace",
)


def with_schema(base: str, schema: str) -> str:
    """`base` reaching `schema` first (its search_path), committing without waiting for the
    disk (synchronous_commit off: a commit is as visible to every session, and only a crash of
    the shared server, which no test causes, could lose one). 406 PostgreSQL tests of the
    data layer, commands and API took 69 s instead of 74 s."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options={quote(f'-csearch_path={schema} -csynchronous_commit=off')}"


def autocommit(url: str) -> Engine:
    return make_engine(url).execution_options(isolation_level="AUTOCOMMIT")


class SqliteTemplate:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "template.sqlite3"
        self._made = False

    def copy_to(self, path: Path) -> None:
        if not self._made:
            engine = make_engine(f"sqlite:///{self.path}")
            upgrade(engine)
            engine.dispose()  # the last connection closed: everything is in the one file
            self._made = True
        shutil.copyfile(self.path, path)


@dataclass(frozen=True)
class Statement:
    sql: str
    parameters: Any


# What a schema is made of, in one number: each catalog row for it changes its transaction id
# (xmin) when it is made or altered, and goes when dropped. Rows written, deleted or analysed
# change none of them.
_CATALOG_PRINT = """
WITH schema AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema()),
relations AS (SELECT oid, xmin FROM pg_class WHERE relnamespace = (SELECT oid FROM schema)),
rows AS (
    SELECT xmin FROM relations
    UNION ALL SELECT a.xmin FROM pg_attribute a JOIN relations r ON r.oid = a.attrelid
    UNION ALL SELECT d.xmin FROM pg_attrdef d JOIN relations r ON r.oid = d.adrelid
    UNION ALL SELECT t.xmin FROM pg_trigger t JOIN relations r ON r.oid = t.tgrelid
    UNION ALL SELECT i.xmin FROM pg_index i JOIN relations r ON r.oid = i.indrelid
    UNION ALL SELECT xmin FROM pg_constraint WHERE connamespace = (SELECT oid FROM schema)
    UNION ALL SELECT xmin FROM pg_proc WHERE pronamespace = (SELECT oid FROM schema)
    UNION ALL SELECT xmin FROM pg_type WHERE typnamespace = (SELECT oid FROM schema)
    UNION ALL SELECT s.xmin FROM pg_sequence s JOIN relations r ON r.oid = s.seqrelid
)
SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM rows
"""

_EMPTY = """
SELECT
    (SELECT string_agg(format('DELETE FROM %I', tablename), '; ')
     FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'alembic_version'),
    (SELECT string_agg(format('SELECT setval(%L, 1, false)', sequencename), '; ')
     FROM pg_sequences WHERE schemaname = current_schema() AND last_value IS NOT NULL)
"""


# What the migrations sent to make a schema, by the server's URL: each PostgresSchemas of the
# process (the tests' own, and those tests/test_databases.py makes to test it) replays the same.
RECORDED: dict[str, list[Statement]] = {}


class PostgresSchemas:
    """Migrated schemas on the server at `base` for this test process."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.admin = autocommit(base)
        # Replaying and emptying schemas, each in a transaction that sets its search_path:
        # one pooled connection for the process, not a new one for every test.
        self.worker = make_engine(base, pool_size=1)
        self._prints: dict[str, str] = {}  # each migrated schema's, as the replay left it
        self._free: list[str] = []
        self._owned: set[str] = set()

    def empty(self) -> str:
        return self._new()

    def migrated(self) -> str:
        if self._free:
            return self._free.pop()
        schema = self._new()
        self._replay(schema)
        return schema

    def done(self, schema: str, *, migrated: bool) -> None:
        """`schema` is no longer used: emptied for the next test when it was migrated and is
        as the migrations left it, dropped otherwise."""
        if migrated and self._emptied(schema):
            self._free.append(schema)
        else:
            self._drop(schema)

    def close(self) -> None:
        for schema in list(self._owned):
            self._drop(schema)
        self.admin.dispose()
        self.worker.dispose()

    def _new(self) -> str:
        schema = f"t_{os.getpid()}_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        self._owned.add(schema)
        return schema

    def _drop(self, schema: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        self._owned.discard(schema)
        self._prints.pop(schema, None)

    def _replay(self, schema: str) -> None:
        """Send the migrations' statements into `schema`, in one transaction: the migrated
        schema without alembic's own work of loading and planning revisions."""
        statements = self._recorded()
        connection = self.worker.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(f'SET LOCAL search_path TO "{schema}"')
            for statement in statements:
                cursor.execute(statement.sql, statement.parameters)
            cursor.execute(_CATALOG_PRINT)
            printed = cursor.fetchone()[0]
            connection.commit()
        finally:
            connection.close()
        self._prints[schema] = printed

    def _recorded(self) -> list[Statement]:
        """The migrations' statements, recorded once per process and server (`RECORDED`): the
        same code migrates the same way, and recording them is a real migration (a second)."""
        if self.base not in RECORDED:
            schema = self._new()
            engine = make_engine(with_schema(self.base, schema))
            sent: list[Statement] = []

            @event.listens_for(engine, "before_cursor_execute")
            def record(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
                if not statement.lstrip().upper().startswith("SELECT"):  # reads change nothing
                    sent.append(Statement(statement, parameters or None))

            upgrade(engine)
            engine.dispose()
            self._drop(schema)
            assert not any(schema in s.sql for s in sent), "a migration named its own schema"
            RECORDED[self.base] = sent
        return RECORDED[self.base]

    def _emptied(self, schema: str) -> bool:
        connection = self.worker.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute(f'SET LOCAL search_path TO "{schema}"')
            cursor.execute("SET LOCAL lock_timeout = '10s'")
            cursor.execute("SET LOCAL synchronous_commit = off")  # as the tests' own (above)
            cursor.execute(_CATALOG_PRINT)
            if cursor.fetchone()[0] != self._prints.get(schema):
                connection.rollback()
                return False
            # Emptying keeps alembic_version's row: a test that changed it (a schema from a
            # newer release, say) left a schema the next test must not get.
            cursor.execute("SELECT version_num FROM alembic_version")
            if [row[0] for row in cursor.fetchall()] != [head_revision()]:
                connection.rollback()
                return False
            cursor.execute(_EMPTY)
            deletes, restarts = cursor.fetchone()
            # Triggers (the documents' queue) and foreign keys are not to act on the way out.
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute(f"{deletes}; {restarts or 'SELECT 1'}")
            connection.commit()
            return True
        finally:
            connection.close()


# --- PostgreSQL connections kept between tests --------------------------------------------------


class KeptConnections:
    """PostgreSQL connections a test process keeps when an engine closes them, and hands to
    the next engine on the same URL (the same schema: tests take turns with a schema, above).

    A new session cost the server 8 ms of CPU on these machines, its first reads of three
    tables 3.4 ms more (the backend's catalog caches start empty), and the client 5 to 7 ms;
    a test's engine and its app's engine each opened one. A kept connection is handed back as
    a pool would hand it to the next request: rolled back and reset (`DISCARD ALL`: settings,
    session locks, temporary tables, prepared statements), and checked alive when taken (a test
    may have restarted the server or ended the backend). At most `MOST` are kept, the least
    recently given back closed first: the server's connections are shared by both test
    processes and every server the tests start."""

    MOST = 6

    def __init__(self) -> None:
        self._idle: list[tuple[str, Any]] = []  # (URL, connection), the oldest first
        self._dialects: dict[str, Any] = {}
        self._lock = threading.Lock()  # engines connect and close from several threads

    def creator(self, url: str) -> Callable[[], Any]:
        """A `create_engine(creator=...)` for the PostgreSQL URL `url` (a driver URL)."""
        if url not in self._dialects:  # one per URL: its adapters go with its connections
            dialect_class = make_url(url).get_dialect()
            self._dialects[url] = dialect_class(dbapi=dialect_class.import_dbapi())
        cargs, cparams = self._dialects[url].create_connect_args(make_url(url))
        kept = _kept_connection_class()

        def connect() -> Any:
            connection = self._take(url) or kept.connect(*cargs, **cparams)
            connection.keep_with(self, url)
            return connection

        return connect

    def _take(self, url: str) -> Any:
        while True:
            with self._lock:
                found = [i for i, (kept_for, _) in enumerate(self._idle) if kept_for == url]
                if not found:
                    return None
                _, connection = self._idle.pop(found[-1])
            try:  # outside any transaction, as it was given back
                connection.autocommit = True
                connection.execute("SELECT 1")
                connection.autocommit = False
            except Exception:  # gone with its backend or the server: a new one instead
                connection.close_for_good()
                continue
            return connection

    def give_back(self, url: str, connection: Any) -> None:
        """`connection` reset and kept, or closed when it cannot be reset."""
        try:
            connection.rollback()
            connection.autocommit = True
            connection.discard_all()
            connection.autocommit = False
        except Exception:
            connection.close_for_good()
            return
        with self._lock:
            self._idle.append((url, connection))
            oldest = self._idle[: -self.MOST]
            del self._idle[: -self.MOST]
        for _, closed in oldest:
            closed.close_for_good()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _, connection in idle:
            connection.close_for_good()


@cache
def _kept_connection_class() -> Any:
    """psycopg's connection, whose `close` hands it back to its `KeptConnections` (psycopg
    and SQLAlchemy ask for their own class: a wrapper will not do)."""
    import psycopg  # here: loaded only where PostgreSQL is tested

    class Kept(psycopg.Connection[Any]):
        _home: tuple[KeptConnections, str] | None = None

        def keep_with(self, keeper: KeptConnections, url: str) -> None:
            self._home = (keeper, url)

        def close(self) -> None:
            home, self._home = self._home, None
            if home is None or self.closed or self.broken:
                super().close()
            else:
                home[0].give_back(home[1], self)

        def close_for_good(self) -> None:
            self._home = None
            super().close()

        def discard_all(self) -> None:
            """`DISCARD ALL`, and psycopg told so. The server forgets the statements psycopg
            prepared on this session (psycopg prepares one it has run five times), and psycopg's
            list of them starts again empty, as a new connection's does. psycopg notices a
            `DISCARD ALL` by itself only when it has not counted one since it last emptied its
            lists (it checks an outcome only for a statement new to them; a rollback empties
            them): a connection given back twice outside a transaction kept its list, and the
            next test's first prepared statement failed with `prepared statement "_pg3_0" does
            not exist` (tests/test_databases.py)."""
            self.execute("DISCARD ALL")
            self._prepared = type(self._prepared)()

    return Kept
