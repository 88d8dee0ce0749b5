"""Databases of their own for the backup tests: backups dump and restore whole databases, so
on PostgreSQL each test gets databases of its own (CREATE DATABASE), not the schemas the other
tests share one database through."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import MetaData, select, text
from sqlalchemy.engine import make_url

from regdesk.db import make_engine
from regdesk.migrations.runner import upgrade
from tests.conftest import POSTGRES_ENV, postgres_base_url
from tests.databases import autocommit


@contextmanager
def database_of_its_own(backend: str, directory: Path, *, migrated: bool = False) -> Iterator[str]:
    """The URL of a new database on `backend`, gone afterwards: empty (a SQLite file not made
    yet, a PostgreSQL database without a table), or `migrated` to the newest schema."""
    if backend == "sqlite":
        url = f"sqlite:///{directory / f'{uuid.uuid4().hex}.sqlite3'}"
        _migrate(url, migrated)
        yield url
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set: PostgreSQL run skipped")
    name = f"backups_{uuid.uuid4().hex[:16]}"
    admin = autocommit(base)
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(base).set(database=name).render_as_string(hide_password=False)
        _migrate(url, migrated)
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _migrate(url: str, migrated: bool) -> None:
    if migrated:
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()


def every_row(database_url: str) -> dict[str, list[str]]:
    """Every row of every table, each table's in one order: two databases holding the same
    records compare equal."""
    engine = make_engine(database_url)
    try:
        reflected = MetaData()
        reflected.reflect(engine)
        with engine.connect() as connection:
            return {
                table.name: sorted(repr(tuple(row)) for row in connection.execute(select(table)))
                for table in reflected.sorted_tables
            }
    finally:
        engine.dispose()
