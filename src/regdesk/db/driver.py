"""The hot paths' own reads and writes: SQL text on the driver's cursor, on a connection the
event loop owns (the bearer guard, record pages, client_credentials tokens)."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from sqlalchemy import Engine

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
