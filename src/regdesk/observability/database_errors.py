"""Database errors that end a request, counted by kind where they are answered: in the error
handlers (errors.py) that render them, whichever path raised them (SQLAlchemy's, from the
pool and from the event loop's PostgreSQL connections, db/driver.py; the driver's own, from
the loop's SQLite connection and from COPY, db/bulk.py).

The kind is the DB-API's exception class (PEP 249): OperationalError (unreachable, a lock
waited too long), IntegrityError, DataError, ProgrammingError...; a handful of values.
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI

from regdesk.db.driver import pep_249_kind
from regdesk.observability import metrics


def database_errors() -> tuple[type[Exception], ...]:
    """A database's errors: SQLAlchemy's, SQLite's, and psycopg's once a PostgreSQL engine has
    loaded it (errors.database_unavailable says why not before)."""
    found: list[type[Exception]] = [sqlalchemy.exc.DBAPIError, sqlite3.Error]
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        found.append(psycopg.Error)
    return tuple(found)


def kind_of(error: BaseException) -> str:
    """The PEP 249 class of a database error (a driver's subclass, e.g. psycopg's
    UniqueViolation, counts as its IntegrityError); DatabaseError when it names none."""
    return pep_249_kind(type(error))


def count_database_errors(app: FastAPI) -> None:
    """Every handler that may render a database error counts it first (call after the error
    handlers are installed, before the first request)."""
    for key, handler in list(app.exception_handlers.items()):
        if key in (500, Exception) or (
            isinstance(key, type) and issubclass(key, database_errors())
        ):
            app.exception_handlers[key] = _counting(handler)


def _counting(handler: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def counted_async(request: Any, error: Exception) -> Any:
            _count(error)
            return await handler(request, error)

        return counted_async

    @functools.wraps(handler)
    def counted(request: Any, error: Exception) -> Any:
        _count(error)
        return handler(request, error)

    return counted


def _count(error: Exception) -> None:
    if isinstance(error, database_errors()):
        metrics.database_error(kind_of(error))
