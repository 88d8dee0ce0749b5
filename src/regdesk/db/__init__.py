"""Engine, sessions and the declarative base, for SQLite (embedded default) and PostgreSQL.

`db.driver` holds the hot paths' own reads and writes on the driver's cursor; `db.instance`
the values every process of a deployment shares. This package knows nothing of the domain: a
feature that must act at a session's moment registers a hook here at start
(`before_write_commits`), as the record documents do (regdesk.documents).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    DateTime,
    Dialect,
    Engine,
    Integer,
    MetaData,
    Table,
    any_,
    bindparam,
    create_engine,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.types import TypeDecorator

# Stable constraint names, so Alembic migrations can refer to them on both databases.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# The Integer primary keys of both databases (32-bit on PostgreSQL): a larger id names nothing.
ID_MAX = 2**31 - 1


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def table_of(model: type[Any]) -> Table:
    """A model's table, as a Table (for its columns' types and lengths)."""
    value = model.__table__
    assert isinstance(value, Table)
    return value


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp stored as UTC and always read back timezone-aware.

    SQLite keeps no zone, so values are normalised to naive UTC on the way in.
    """

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        return value.astimezone(dt.UTC).replace(tzinfo=None)

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)

    # SQLite: the text SQLite's DATETIME stores, made and read in one step each instead of
    # two processors and a regular expression (a fifth of a 100,000-user demo's time, and of
    # each record read): the same text (`2026-07-04 18:30:00.000000`), the same values.
    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        if dialect.name == "sqlite":
            return _sqlite_text
        return super().bind_processor(dialect)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any] | None:
        general = super().result_processor(dialect, coltype)
        if dialect.name != "sqlite" or general is None:
            return general

        def read(value: Any) -> dt.datetime | None:
            if value is None:
                return None
            try:
                parsed = dt.datetime.fromisoformat(value)
            except (TypeError, ValueError):
                return general(value)  # written by hand in another spelling: SQLAlchemy's way
            if parsed.tzinfo is not None:
                return general(value)
            return parsed.replace(tzinfo=dt.UTC)

        return read


def _sqlite_text(value: dt.datetime | None) -> str | None:
    """What process_bind_param then SQLite's DATETIME would store: `2026-07-04 18:30:00.000000`."""
    if value is None:
        return None
    if value.tzinfo is not dt.UTC:
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        value = value.astimezone(dt.UTC)
    return value.isoformat(" ", "microseconds")[:26]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def normalize_url(url: str) -> str:
    """`postgresql://` means our driver, psycopg 3 (the plain form would ask for psycopg2)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def is_sqlite(bind: Engine | Connection | Session) -> bool:
    engine = bind.get_bind() if isinstance(bind, Session) else bind
    return engine.dialect.name == "sqlite"


def core_connection(bind: Connection | Session) -> Connection:
    """The Core connection under `bind` (a session's, in its transaction): reads of plain rows
    by the thousand skip the ORM's result machinery, which costs more than rendering them."""
    return bind.connection() if isinstance(bind, Session) else bind


def among(bind: Engine | Connection | Session, column: Any, ids: list[int]) -> Any:
    """`column IN ids` for a batch of thousands. Ids that run without a gap (a batch of a
    whole table queued, as after a demo or an import) as a range, which both databases answer
    from an index without reading a list; otherwise on PostgreSQL one array parameter
    (`= ANY(...)`), which the driver sends as is, where thousands of parameters cost more to
    convert than the query does to run; on SQLite the list."""
    distinct = set(ids)
    if distinct and max(distinct) - min(distinct) + 1 == len(distinct):
        return column.between(min(distinct), max(distinct))
    if is_sqlite(bind):
        return column.in_(ids)
    return column == any_(bindparam(None, ids, type_=ARRAY(Integer)))


# Connections a process keeps open, and never more: a request in a worker thread beyond them
# waits for one. SQLAlchemy's default (5 kept, 10 more made on demand and closed when given
# back) made and closed a connection for most requests under load: on SQLite a new
# connection parses the schema again, on PostgreSQL it is a login (departments answered 226
# requests/s, at 16 connections).
POOL_SIZE = 15


# What every PostgreSQL session of regdesk's sets (the engine's and the event loop's, in
# db.driver). jit off: PostgreSQL compiles a statement whose estimated cost passes
# jit_above_cost, and a page planned once for any values (its LIMIT a parameter, reckoned at a
# tenth of the table) passes it once the table is large: with 1,000,000 users, every user
# search spent 9 ms compiling a plan that then ran in under 1 ms (518 requests/s, and 3,599
# with jit off; 3,848 with 100,000 users). regdesk's statements read a few rows by index, and
# none gains from compiling.
POSTGRESQL_SETTINGS = {"jit": "off"}


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalize_url(url)
    if "poolclass" not in kwargs and make_url(url).database not in (None, "", ":memory:"):
        kwargs.setdefault("pool_size", POOL_SIZE)
        kwargs.setdefault("max_overflow", 0)
    if make_url(url).get_backend_name() == "sqlite":
        return _make_sqlite_engine(url, **kwargs)
    kwargs.setdefault("pool_pre_ping", True)
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _settings(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        with dbapi_connection.cursor() as cursor:
            for name, value in POSTGRESQL_SETTINGS.items():
                cursor.execute("SELECT set_config(%s, %s, false)", (name, value))
        dbapi_connection.commit()  # the session's settings, kept past this transaction

    return engine


def _make_sqlite_engine(url: str, **kwargs: Any) -> Engine:
    connect_args = kwargs.pop("connect_args", {})
    connect_args.setdefault("timeout", 30)
    connect_args.setdefault("check_same_thread", False)
    engine = create_engine(url, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy, not the driver, say when a transaction begins (SQLAlchemy's
        # documented pysqlite recipe); WAL lets readers run beside one writer.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        if make_url(url).database not in (None, "", ":memory:"):
            _enter_wal(cursor, connect_args["timeout"])
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A writer takes the write lock up front; a deferred transaction that reads first and
        # writes later can fail with SQLITE_BUSY instead of waiting for its turn.
        if conn.get_execution_options().get("regdesk_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


def _enter_wal(cursor: Any, timeout: float) -> None:
    """Switch the file to WAL, waiting as a lock wait would. Two processes that open a new
    file at once (two servers starting on one database) race to switch it, and the loser
    gets "database is locked" at once: SQLite does not call the busy handler there."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


_BEFORE_COMMIT: list[Callable[[Session], None]] = []


def before_write_commits(hook: Callable[[Session], None]) -> None:
    """Run `hook(session)` at the end of every `write_session` that reached the database,
    flushed, before it commits: a feature that must act at that moment registers here at start
    (once; again is harmless)."""
    if hook not in _BEFORE_COMMIT:
        _BEFORE_COMMIT.append(hook)


class _WriteSession(Session):
    """A `write_session`'s session, which notes when its transaction first reaches the
    database (`began`): SQLAlchemy takes a connection, and begins on it, only then."""

    began = False


@event.listens_for(_WriteSession, "after_begin")
def _began(session: _WriteSession, _transaction: Any, _connection: Connection) -> None:
    session.began = True


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One transaction for a unit of writes: committed when the block ends, rolled back on error.

    A block that sent the database nothing (a page whose visitor has no session cookie) ends
    without a word to it, hooks included: it wrote nothing for them to act on, and on SQLite
    their first statement would have taken the write lock (BEGIN IMMEDIATE) for nothing."""
    bind = engine.execution_options(regdesk_write=True)
    with _WriteSession(bind=bind, expire_on_commit=False) as session, session.begin():
        yield session
        session.flush()
        if session.began:
            for hook in _BEFORE_COMMIT:
                hook(session)


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(bind=engine, expire_on_commit=False) as s, s.begin():
        yield s


def naive_utc(value: dt.datetime | str) -> dt.datetime:
    """A timestamp as naive UTC: a column's raw value (SQLite keeps them as ISO text), an ISO
    string, or an aware datetime."""
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


def refresh_statistics(engine: Engine) -> None:
    """Let the query planner see the data after a bulk load (PostgreSQL plans a role-filtered
    page of 100,000 users in 270 ms without statistics, 0.2 ms with them)."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            # Our tables, by name, as the search path finds them (those the schema has: a
            # restored backup of an older release lacks the newer ones): a bare ANALYZE reads
            # every table of the database, other schemas' included (another deployment's, or
            # the test suite's dozens of copies: 68 ms after each import of a few rows).
            autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
            present = autocommit.execute(
                text(
                    "SELECT name FROM unnest(CAST(:names AS text[])) AS name"
                    " WHERE to_regclass(quote_ident(name)) IS NOT NULL"
                ),
                {"names": [table.name for table in Base.metadata.sorted_tables]},
            ).scalars()
            quote = connection.dialect.identifier_preparer.quote
            autocommit.exec_driver_sql(f"ANALYZE {', '.join(map(quote, present))}")
        else:
            # It may write (ANALYZE), so it takes the write lock up front as every writer does:
            # begun as a reader, it failed at once ("database is locked") when a commit came
            # between its read and its write, and the import that had just committed was
            # reported as failed.
            connection.execution_options(regdesk_write=True)
            connection.exec_driver_sql("PRAGMA optimize")
            connection.commit()


def sync_sequences(session: Session, *tables: str) -> None:
    """After rows were written with explicit ids, move PostgreSQL's sequences past them."""
    if is_sqlite(session):
        return  # SQLite's rowid allocation already takes max(id) + 1.
    for table in tables:
        session.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 (names are ours)
                f"GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), 1), "
                f"(SELECT COUNT(*) > 0 FROM {table}))"
            )
        )


def upsert_ignore(session: Session, table: Any, values: dict[str, Any]) -> None:
    """INSERT that does nothing when the primary key is already there (both databases)."""
    dialect_insert = sqlite_insert if is_sqlite(session) else pg_insert
    session.execute(dialect_insert(table).values(**values).on_conflict_do_nothing())
