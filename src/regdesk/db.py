"""Engine, sessions and the declarative base, for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from sqlalchemy import (
    DateTime,
    Dialect,
    Engine,
    MetaData,
    String,
    create_engine,
    event,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
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


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalize_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _make_sqlite_engine(url, **kwargs)
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


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
            cursor.execute("PRAGMA journal_mode=WAL")
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


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One transaction for a unit of writes: committed when the block ends, rolled back on error."""
    # documents/service.py imports the models, which import this module.
    from regdesk.documents.service import refresh

    bind = engine.execution_options(regdesk_write=True)
    with Session(bind=bind, expire_on_commit=False) as session, session.begin():
        yield session
        session.flush()
        refresh(session)  # the record documents the block's changes made stale


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(bind=engine, expire_on_commit=False) as s, s.begin():
        yield s


SQL_LOG = logging.getLogger("regdesk.sql")


class Query:
    """A read on every request's path, as SQL text run on the driver's own cursor.

    On these index seeks SQLAlchemy's per-call work (building the statement, its cache key,
    the result's metadata) costs three times the query. The SQL is written once, portable, with
    `:name` parameters; rows come back as the driver gives them (SQLite: timestamps as text,
    booleans as 0 and 1: see `naive_utc`). Each statement is logged at DEBUG on `regdesk.sql`.
    """

    _PARAMETER = re.compile(r"(?<![:\w]):(\w+)")

    def __init__(self, sql: str) -> None:
        self.sql = " ".join(sql.split())
        self.names = tuple(self._PARAMETER.findall(self.sql))
        self.qmark = self._PARAMETER.sub("?", self.sql)
        self.pyformat = self._PARAMETER.sub(r"%(\1)s", self.sql.replace("%", "%%"))


def naive_utc(value: dt.datetime | str) -> dt.datetime:
    """A timestamp as naive UTC: a column's raw value (SQLite keeps them as ISO text), an ISO
    string, or an aware datetime."""
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


SQLITE_BUSY, SQLITE_LOCKED = 5, 6


class LoopReads:
    """The connection an event loop reads through on the hot paths (the guard, record pages),
    and, with `writer=True`, the one it writes single rows through (a client_credentials token).

    Reads there are single statements that seek an index and never wait for a lock (WAL on
    SQLite, MVCC on PostgreSQL), so the loop runs them itself: no thread hand-off, no pool
    checkout. One driver connection in autocommit, each statement its own transaction, used
    from the loop's thread only. A statement that fails on a broken connection (a database
    restart) runs once more on a new one.

    The writer never makes the loop wait: on SQLite it gives up at once when another writer
    holds the lock (`try_write` says False, and the caller takes the path that waits, in a
    worker thread); on PostgreSQL it commits without waiting for the disk (synchronous_commit
    off: a crash may forget the last few tokens issued, whose clients then ask again).
    """

    def __init__(self, engine: Engine, *, writer: bool = False) -> None:
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"
        self.writer = writer
        self._connection: Any = None
        self._thread: int | None = None

    def all(self, query: Query, **parameters: Any) -> list[tuple[Any, ...]]:
        self._check_thread()
        try:
            return self._run(query, parameters)
        except self.engine.dialect.loaded_dbapi.OperationalError:
            self._drop()  # the server went away: once more, on a new connection
            return self._run(query, parameters)
        except BaseException:
            self._drop()
            raise

    def first(self, query: Query, **parameters: Any) -> tuple[Any, ...] | None:
        rows = self.all(query, **parameters)
        return rows[0] if rows else None

    def try_write(self, query: Query, rows: Sequence[dict[str, Any]]) -> bool:
        """Run a writing statement for each of `rows`, all in one transaction, unless that
        means waiting for SQLite's write lock or a row breaks a constraint: then False, and
        nothing is written."""
        assert self.writer, "a LoopReads(writer=True) writes"
        self._check_thread()
        dbapi = self.engine.dialect.loaded_dbapi
        try:
            self._run_many(query, rows)
        except dbapi.IntegrityError:
            return False
        except dbapi.OperationalError as error:
            self._drop()
            if getattr(error, "sqlite_errorcode", None) in (SQLITE_BUSY, SQLITE_LOCKED):
                return False
            raise
        except BaseException:
            self._drop()
            raise
        return True

    def _run_many(self, query: Query, rows: Sequence[dict[str, Any]]) -> None:
        if SQL_LOG.isEnabledFor(logging.DEBUG):
            SQL_LOG.debug("%s x %d", query.sql, len(rows))
        if self._connection is None:
            self._connection = self._connect()
        driver: Any = self._connection.driver_connection
        if self.sqlite:
            driver.execute("BEGIN IMMEDIATE")
            try:
                driver.executemany(query.qmark, [[r[n] for n in query.names] for r in rows])
                driver.execute("COMMIT")
            except BaseException:
                with suppress(Exception):
                    driver.execute("ROLLBACK")
                raise
        else:
            with driver.transaction(), driver.cursor() as cursor:
                cursor.executemany(query.pyformat, rows)

    def _check_thread(self) -> None:
        thread = threading.get_ident()
        if self._thread != thread:
            if self._thread is not None:
                raise RuntimeError("LoopReads serves its event loop's thread only")
            self._thread = thread

    def _run(self, query: Query, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        if SQL_LOG.isEnabledFor(logging.DEBUG):
            SQL_LOG.debug("%s %r", query.sql, parameters)
        if self._connection is None:
            self._connection = self._connect()
        cursor = self._connection.cursor()
        try:
            if self.sqlite:
                cursor.execute(query.qmark, [parameters[name] for name in query.names])
            else:
                cursor.execute(query.pyformat, parameters)
            return list(cursor.fetchall()) if cursor.description else []
        finally:
            cursor.close()

    def _connect(self) -> Any:
        connection = self.engine.raw_connection()
        driver: Any = connection.driver_connection
        if self.sqlite:  # the driver connection is in autocommit already (_on_connect)
            if self.writer:
                driver.execute("PRAGMA busy_timeout = 0")
        else:
            driver.autocommit = True
            if self.writer:
                driver.execute("SET synchronous_commit TO off")
        return connection

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with suppress(Exception):
                connection.invalidate()

    def close(self) -> None:
        """Closed, not returned to the pool: the pool's other users expect its settings."""
        self._drop()


class GroupedWrites:
    """Rows that requests on one event loop want written, committed together once a turn.

    Each commit costs a write to the log (a WAL frame on SQLite, a WAL flush on PostgreSQL)
    whatever it holds: under load the requests that arrive together share one (group commit).
    A request's answer still waits for its row to be committed.
    """

    def __init__(self, writes: LoopReads, query: Query) -> None:
        self._writes, self._query = writes, query
        self._pending: list[tuple[dict[str, Any], asyncio.Future[bool]]] = []

    async def write(self, row: dict[str, Any]) -> bool:
        """Whether the row was written (False: see LoopReads.try_write)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((row, future))
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            written = self._writes.try_write(self._query, [row for row, _ in batch])
        except Exception as error:
            for _, future in batch:
                future.set_exception(error)
            return
        for _, future in batch:
            future.set_result(written)


def refresh_statistics(engine: Engine) -> None:
    """Let the query planner see the data after a bulk load (PostgreSQL plans a role-filtered
    page of 100,000 users in 270 ms without statistics, 0.2 ms with them)."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
        else:
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


class InstanceSetting(Base):
    """Per-deployment values that every process must share, such as the generated secret key."""

    __tablename__ = "instance_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


def upsert_ignore(session: Session, table: Any, values: dict[str, Any]) -> None:
    """INSERT that does nothing when the primary key is already there (both databases)."""
    dialect_insert = sqlite_insert if is_sqlite(session) else pg_insert
    session.execute(dialect_insert(table).values(**values).on_conflict_do_nothing())


def instance_secret_key(engine: Engine, configured: str | None) -> str:
    """The secret key: the configured one, else the one this deployment generated once.

    The first process to ask writes it; a concurrent one loses the insert race and reads the
    winner's, so every worker of one deployment agrees (operator.md, REGDESK_SECRET_KEY).
    """
    if configured:
        return configured
    with write_session(engine) as session:
        upsert_ignore(
            session,
            InstanceSetting.__table__,
            {"key": "secret_key", "value": secrets.token_urlsafe(48), "created_at": utcnow()},
        )
        return session.scalars(
            select(InstanceSetting.value).where(InstanceSetting.key == "secret_key")
        ).one()
