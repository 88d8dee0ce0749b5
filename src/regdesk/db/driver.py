"""The hot paths' own reads and writes: SQL text on the driver's cursor, on connections the
event loop owns (the bearer guard, record pages, client_credentials tokens)."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any, TypeVar

import sqlalchemy.exc
from sqlalchemy import Engine

from regdesk.db import POSTGRESQL_SETTINGS

SQL_LOG = logging.getLogger("regdesk.sql")


class Query:
    """A read on every request's path, as SQL text run on the driver's own cursor.

    On these index seeks SQLAlchemy's per-call work (building the statement, its cache key,
    the result's metadata) costs three times the query. The SQL is written once, portable, with
    `:name` parameters; rows come back as the driver gives them (SQLite: timestamps as text,
    booleans as 0 and 1: see `naive_utc`). Each statement is logged at DEBUG on `regdesk.sql`.
    A statement only one of the databases runs (an aggregate each names its own way) says which,
    `only` ("sqlite" or "postgresql"), and its caller picks it by `LoopReads.sqlite`. A read
    each database plans well in its own way gives SQLite's text as `sqlite` (the same rows, the
    same parameters), which SQLite then runs instead.

    PostgreSQL plans a read once, for any values (a generic plan): left to choose, it planned a
    page again at every run (its `LIMIT` is a value), a fifth of the database server's time on
    a page of users. A read whose best plan depends on its values says `plan_once=False`, and
    PostgreSQL plans it by its own rule (plan_cache_mode auto: for the values of its first five
    runs, then once for any values where that costs no more): a filter that may match a few
    rows of many, which an index on that column finds first. (A page of the current event's
    records is written so that one plan serves every page: events.models.in_current_event.)
    """

    _PARAMETER = re.compile(r"(?<![:\w]):(\w+)")

    def __init__(
        self,
        sql: str,
        *,
        only: str | None = None,
        sqlite: str | None = None,
        plan_once: bool = True,
    ) -> None:
        self.only = only
        self.plan_once = plan_once
        self.sql = " ".join(sql.split())
        self.sqlite_sql = " ".join(sqlite.split()) if sqlite is not None else self.sql
        self.names = tuple(self._PARAMETER.findall(self.sqlite_sql))
        self.qmark = self._PARAMETER.sub("?", self.sqlite_sql)
        # PostgreSQL's own placeholders, one per name ($1 each time :user_id appears), bound
        # by position in the order of `unique`: what psycopg sends as it is, with nothing to
        # convert at each run (its raw cursors).
        self.unique = tuple(dict.fromkeys(self._PARAMETER.findall(self.sql)))
        number = {name: f"${i}" for i, name in enumerate(self.unique, 1)}
        self.numbered = self._PARAMETER.sub(lambda m: number[m.group(1)], self.sql)


SQLITE_BUSY, SQLITE_LOCKED = 5, 6
# PostgreSQL: how many connections an event loop reads through at most, and writes through.
# A read there is a round trip to the server; with several connections the loop answers other
# requests while one waits, instead of waiting with it (16 requests at once: 4 connections
# 2,341 get-user requests/s, 8 2,549, 16 2,653). Writes are the INSERTs of a turn's tokens
# (GroupedWrites), a few batches in flight at once (2 connections 2,150 client_credentials
# requests/s, 4 2,850, 8 2,870). Each worker's budget, with the engine's pool:
# docs/operators/deployment.md.
PG_CONNECTIONS = 8
PG_WRITE_CONNECTIONS = 4
# How long one of those connections serves, in seconds, before a new one takes its place. Its
# statements are planned once (Query), for the tables as they were then; PostgreSQL plans them
# again when ANALYZE has counted the tables anew (autovacuum does), and a new connection plans
# them for the tables as they are. A plan made while a table was nearly empty (a scan of the
# whole table) is thus kept for a minute at most, even where autovacuum is off. Seen once,
# without autovacuum: as token grants filled the access tokens' table for minutes, every bearer
# check cost the database server more (get user 213, then 1,449, then 2,430 µs a request), and
# PostgreSQL had counted 354,172 whole scans of that table.
PG_CONNECTION_LIFETIME = 60.0


class LoopReads:
    """The connections an event loop reads through on the hot paths (the guard, record pages),
    and, with `writer=True`, writes single rows through (a client_credentials token).

    Reads there are single statements that seek an index and never wait for a lock (WAL on
    SQLite, MVCC on PostgreSQL), each its own transaction, with no thread hand-off and no pool
    checkout; used from the loop's thread only. On SQLite the loop runs them itself, on one
    driver connection: a read is a few microseconds of the loop's time, and awaiting it costs
    nothing more. On PostgreSQL a read is a round trip to the server, so they are awaited on
    asyncpg's connections (up to PG_CONNECTIONS, made as requests need them, each serving for
    PG_CONNECTION_LIFETIME): the loop answers other requests while the server works. A
    statement that fails on a broken connection (a database restart) runs once more on a new
    one.

    The writer never makes the loop wait for a lock: on SQLite it gives up at once when another
    writer holds the lock (`try_write` says False, and the caller takes the path that waits, in
    a worker thread); on PostgreSQL it commits without waiting for the disk (synchronous_commit
    off: a crash may forget the last few tokens issued, whose clients then ask again).
    """

    def __init__(self, engine: Engine, *, writer: bool = False) -> None:
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"
        self.writer = writer
        self._connection: Any = None  # SQLite's
        self._cursor: Any = None  # on it (`_sqlite`)
        self._idle: list[_Held] = []  # PostgreSQL's, free
        self._slots: asyncio.Semaphore | None = None
        self._thread: int | None = None

    async def all(self, query: Query, **parameters: Any) -> list[tuple[Any, ...]]:
        return await self._all(query, parameters, text_as_bytes=False)

    async def documents(self, query: Query, **parameters: Any) -> list[tuple[Any, ...]]:
        """`all`, but text comes back as its UTF-8 bytes: a page of the JSON a document table
        keeps, sent as it is stored. Decoded to text and encoded again for the answer, it cost
        a sixth of a page's time."""
        return await self._all(query, parameters, text_as_bytes=True)

    async def _all(
        self, query: Query, parameters: dict[str, Any], *, text_as_bytes: bool
    ) -> list[tuple[Any, ...]]:
        self._check_thread()
        if SQL_LOG.isEnabledFor(logging.DEBUG):
            SQL_LOG.debug("%s %r", query.sqlite_sql if self.sqlite else query.sql, parameters)
        if not self.sqlite:
            read = functools.partial(_read, text_as_bytes=text_as_bytes)
            return await self._on_postgresql(read, query, parameters)
        try:
            return self._read_sqlite(query, parameters, text_as_bytes)
        except self.engine.dialect.loaded_dbapi.OperationalError:
            self._drop()  # the file went away: once more, on a new connection
            return self._read_sqlite(query, parameters, text_as_bytes)
        except BaseException:
            self._drop()
            raise

    async def first(self, query: Query, **parameters: Any) -> tuple[Any, ...] | None:
        rows = await self.all(query, **parameters)
        return rows[0] if rows else None

    async def try_write(self, query: Query, rows: Sequence[dict[str, Any]]) -> bool:
        """Run a writing statement for each of `rows`, all in one transaction, unless that
        means waiting for SQLite's write lock or a row breaks a constraint: then False, and
        nothing is written."""
        assert self.writer, "a LoopReads(writer=True) writes"
        self._check_thread()
        if SQL_LOG.isEnabledFor(logging.DEBUG):
            SQL_LOG.debug("%s x %d", query.sql, len(rows))
        dbapi = self.engine.dialect.loaded_dbapi
        try:
            if self.sqlite:
                self._write_sqlite(query, rows)
            else:
                await self._on_postgresql(_write, query, rows)
        except (dbapi.IntegrityError, sqlalchemy.exc.IntegrityError):
            return False
        except (dbapi.OperationalError, sqlalchemy.exc.OperationalError) as error:
            self._drop()
            if getattr(error, "sqlite_errorcode", None) in (SQLITE_BUSY, SQLITE_LOCKED):
                return False
            raise
        except BaseException:
            self._drop()
            raise
        return True

    def _check_thread(self) -> None:
        thread = threading.get_ident()
        if self._thread != thread:
            if self._thread is not None:
                raise RuntimeError("LoopReads serves its event loop's thread only")
            self._thread = thread

    # --- SQLite: the loop's one connection, run by the loop itself ---------------------------

    def _sqlite(self) -> Any:
        """The driver cursor every statement of this loop runs on, on the loop's connection.
        One kept cursor, as PostgreSQL's connections here keep theirs (`_Held`): a cursor made
        and closed for each statement cost a get user 4 to 6 % of its CPU (165 and 162 µs a
        request against 172, in two series of alternating servers; the driver registers each
        cursor it makes with its connection). Each statement has given all its rows, and is
        done, before the next runs."""
        if self._cursor is None:
            self._connection = self.engine.raw_connection()
            driver = self._connection.driver_connection
            if self.writer:  # the driver connection is in autocommit already (_on_connect)
                driver.execute("PRAGMA busy_timeout = 0")
            self._cursor = driver.cursor()
        return self._cursor

    def _read_sqlite(
        self, query: Query, parameters: dict[str, Any], text_as_bytes: bool
    ) -> list[tuple[Any, ...]]:
        cursor = self._sqlite()
        driver = cursor.connection  # the loop's own connection, one statement at a time
        if text_as_bytes:
            driver.text_factory = bytes
        try:
            cursor.execute(query.qmark, [parameters[name] for name in query.names])
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows
        finally:
            driver.text_factory = str

    def _write_sqlite(self, query: Query, rows: Sequence[dict[str, Any]]) -> None:
        cursor = self._sqlite()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            cursor.executemany(query.qmark, [[r[n] for n in query.names] for r in rows])
            cursor.execute("COMMIT")
        except BaseException:
            with suppress(Exception):
                cursor.execute("ROLLBACK")
            raise

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        self._cursor = None
        if connection is not None:
            with suppress(Exception):
                connection.invalidate()

    # --- PostgreSQL: asyncpg's connections ----------------------------------------------------

    async def _on_postgresql(self, work: _Work[T], query: Query, argument: Any) -> T:
        """`work` done on a free connection of this loop's (once more on a new one when the
        connection turns out broken); the connection is closed if `work` fails otherwise. The
        driver's errors come out as the PEP 249 classes SQLAlchemy raises (`_as_pep_249`)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(PG_WRITE_CONNECTIONS if self.writer else PG_CONNECTIONS)
        async with self._slots:
            for last_try in (False, True):
                held: _Held | None = None
                try:
                    held = self._take(query.plan_once) or await self._connect()
                    await held.plan(query.plan_once)
                    result = await work(held, query, argument)
                except Exception as error:
                    lost = held is not None and _lost(held, error)
                    if held is not None:
                        held.connection.terminate()
                    translated = _as_pep_249(error, query)
                    if translated is None:
                        raise
                    if last_try or not lost:
                        raise translated from error
                    # The server went away (a restart): its other connections with it.
                    stale, self._idle = self._idle, []
                    for each in stale:
                        each.connection.terminate()
                    continue
                except BaseException:  # cancelled midway: the connection is in no known state
                    if held is not None:
                        held.connection.terminate()
                    raise
                if held.born + PG_CONNECTION_LIFETIME > time.monotonic():
                    self._idle.append(held)
                else:
                    held.connection.terminate()  # the next read connects anew
                return result
        raise AssertionError("unreachable")

    def _take(self, plan_once: bool) -> _Held | None:
        """An idle connection, planning as `plan_once` asks if one does (the last used first)."""
        for i in range(len(self._idle) - 1, -1, -1):
            if self._idle[i].plan_once is plan_once:
                return self._idle.pop(i)
        return self._idle.pop() if self._idle else None

    async def _connect(self) -> _Held:
        """A new connection to the engine's database (its URL: host, user, database, options,
        TLS settings, as libpq reads them)."""
        import asyncpg  # loaded only by a PostgreSQL engine's loop

        url = self.engine.url.set(drivername="postgresql")
        timeout = url.query.get("connect_timeout")
        url = url.difference_update_query(["connect_timeout"])
        settings = {**POSTGRESQL_SETTINGS, **({"synchronous_commit": "off"} if self.writer else {})}
        connection = await asyncpg.connect(
            url.render_as_string(hide_password=False),
            server_settings=settings,
            statement_cache_size=0,  # the statements are prepared by _Held, once each
            timeout=float(timeout) if isinstance(timeout, str) else 60,
        )
        try:
            # Text columns as the bytes the server sent (UTF-8: asyncpg's connections ask for
            # it). `LoopReads.documents` hands them on as they are; `all` decodes them.
            await connection.set_type_codec(
                "text", schema="pg_catalog", encoder=_utf8, decoder=bytes, format="binary"
            )
        except BaseException:
            connection.terminate()
            raise
        return _Held(connection)

    def close(self) -> None:
        """Closed, not returned to the pool: the pool's other users expect its settings.
        PostgreSQL's connections are closed by `aclose`, on their loop."""
        self._drop()

    async def aclose(self) -> None:
        self.close()
        idle, self._idle = self._idle, []
        for held in idle:
            try:
                await held.connection.close(timeout=5)
            except Exception:
                held.connection.terminate()


class _Prepared:
    """A statement prepared on one connection, and which of its columns are text."""

    __slots__ = ("statement", "text_columns")

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.text_columns = tuple(
            i for i, column in enumerate(statement.get_attributes()) if column.type.oid == TEXT_OID
        )


class _Held:
    """One of a loop's PostgreSQL connections (asyncpg's), with the statements prepared on it.

    asyncpg, not psycopg, on the loop: a page of 100 volunteers cost psycopg's asynchronous
    connection 778 to 911 µs of the client's CPU, asyncpg 428 to 581 (each alone, in a loop,
    against the local server). psycopg waits for each piece of the answer on the event loop,
    registering its socket and dropping it again; asyncpg's protocol is the loop's own, and
    decodes the rows in C. Each statement is prepared the first time a connection runs it, and
    run as prepared from then on: one round trip, its text sent once."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.statements: dict[Query, _Prepared] = {}
        self.plan_once: bool | None = None  # how the session plans (Query.plan_once)
        self.born = time.monotonic()

    async def prepared(self, query: Query) -> _Prepared:
        found = self.statements.get(query)
        if found is None:
            name = f"regdesk_{len(self.statements)}"  # unnamed, the next would replace it
            found = _Prepared(await self.connection.prepare(query.numbered, name=name))
            self.statements[query] = found
        return found

    async def plan(self, plan_once: bool) -> None:
        """The session planning statements as a read asks (`Query.plan_once`): a prepared
        statement is then planned once, or as PostgreSQL chooses."""
        if self.plan_once is not plan_once:
            mode = "force_generic_plan" if plan_once else "auto"
            await self.connection.execute(f"SET plan_cache_mode TO {mode}")
            self.plan_once = plan_once


T = TypeVar("T")
_Work = Callable[[_Held, Query, Any], Awaitable[T]]
TEXT_OID = 25  # pg_catalog.text


def _utf8(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


async def _read(
    held: _Held, query: Query, parameters: dict[str, Any], *, text_as_bytes: bool
) -> list[Any]:
    prepared = await held.prepared(query)
    rows: list[Any] = await prepared.statement.fetch(*[parameters[name] for name in query.unique])
    texts = prepared.text_columns
    if text_as_bytes or not texts:
        # asyncpg's records, read as tuples are (indexed, unpacked, compared with tuples):
        # copying each into a tuple cost a page of 101 rows 3.5 µs of the loop's time.
        return rows
    return [
        tuple(v.decode() if i in texts and v is not None else v for i, v in enumerate(row))
        for row in rows
    ]


async def _write(held: _Held, query: Query, rows: Sequence[dict[str, Any]]) -> None:
    prepared = await held.prepared(query)
    async with held.connection.transaction():
        await prepared.statement.executemany([[r[n] for n in query.unique] for r in rows])


# The PEP 249 classes, by the names SQLAlchemy's exceptions share with them.
_PEP_249 = frozenset(
    {
        "InterfaceError",
        "DatabaseError",
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    }
)


def pep_249_kind(cls: type[BaseException]) -> str:
    """The PEP 249 class an error class is, by name (a driver's subclass, e.g. psycopg's
    UniqueViolation, is its IntegrityError); DatabaseError when it names none."""
    return next((c.__name__ for c in cls.__mro__ if c.__name__ in _PEP_249), "DatabaseError")


def _pep_249_name(sqlstate: str) -> str:
    """The PEP 249 class psycopg gives an error of this SQLSTATE (its own table of every code,
    the pool's connections' driver): the same kinds whichever connection met the error."""
    from psycopg import errors  # a PostgreSQL engine has loaded it

    try:
        found = errors.lookup(sqlstate)
    except KeyError:
        return "DatabaseError"
    return pep_249_kind(found)


def _lost(held: _Held, error: Exception) -> bool:
    """Whether `error` says the connection is gone, or in a state no statement can follow
    (asyncpg's own errors: one read while the server's farewell was still arriving found its
    connection halfway through that message), rather than that the statement failed."""
    import asyncpg

    if held.connection.is_closed() or not isinstance(error, asyncpg.PostgresError):
        return True
    return isinstance(error, asyncpg.PostgresConnectionError) or error.severity in (
        "FATAL",
        "PANIC",
    )


def _as_pep_249(error: Exception, query: Query) -> Exception | None:
    """asyncpg's `error` as SQLAlchemy's exception of its PEP 249 class, the driver's error as
    its `orig`, as the pool's connections raise them; None for an error not the driver's. A
    connection lost, never made, or left in an unknown state is an OperationalError: the
    database is unavailable, and the request is answered 503."""
    import asyncpg

    if isinstance(error, asyncpg.PostgresError):
        name = _pep_249_name(str(getattr(error, "sqlstate", "") or ""))
    elif isinstance(error, asyncpg.InterfaceError | asyncpg.InternalClientError | OSError):
        name = "OperationalError"
    else:
        return None
    kind: type[sqlalchemy.exc.DBAPIError] = getattr(sqlalchemy.exc, name)
    return kind(query.sql, None, error)


class GroupedWrites:
    """Rows that requests on one event loop want written, committed together once a turn.

    Each commit costs a write to the log (a WAL frame on SQLite, a WAL flush on PostgreSQL)
    whatever it holds: under load the requests that arrive together share one (group commit).
    A request's answer still waits for its row to be committed.
    """

    def __init__(self, writes: LoopReads, query: Query) -> None:
        self._writes, self._query = writes, query
        self._pending: list[tuple[dict[str, Any], asyncio.Future[bool]]] = []
        self._committing: set[asyncio.Task[None]] = set()

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
        task = asyncio.get_running_loop().create_task(self._commit(batch))
        self._committing.add(task)  # kept until done: a task nobody holds may be collected
        task.add_done_callback(self._committing.discard)

    async def _commit(self, batch: list[tuple[dict[str, Any], asyncio.Future[bool]]]) -> None:
        try:
            written = await self._writes.try_write(self._query, [row for row, _ in batch])
        except Exception as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for _, future in batch:
            if not future.done():
                future.set_result(written)
