"""Shared fixtures: a migrated database on SQLite, and on PostgreSQL when it is configured.

Tests that take `database_url` (or `engine`) run once per backend. PostgreSQL runs need
REGDESK_TEST_POSTGRES_URL (`.ci/run` sets it); each test then gets a schema of its own,
dropped afterwards, reached through the URL's search_path so subprocesses see it too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, text

from regdesk.cli import main
from regdesk.db import make_engine
from regdesk.migrations.runner import upgrade

POSTGRES_ENV = "REGDESK_TEST_POSTGRES_URL"


def postgres_base_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


@contextmanager
def scratch_database_url(backend: str, directory: Path) -> Iterator[str]:
    """An empty database of its own on `backend` (sqlite or postgresql), dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / f'{uuid.uuid4().hex}.sqlite3'}"
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set: PostgreSQL run skipped")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = make_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'regdesk.sqlite3'}"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """A database migrated to the newest schema."""
    engine = make_engine(database_url)
    upgrade(engine)
    yield engine
    engine.dispose()


class Cli:
    """Runs `regdesk` in-process against one database, the way an organizer types it."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(
            main,
            list(args),
            input=input,
            env={"REGDESK_DATABASE_URL": self.database_url, "REGDESK_SECRET_KEY": None},
            catch_exceptions=False,
        )

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, f"regdesk {' '.join(args)}: {result.output}{result.stderr}"
        return result


@pytest.fixture
def cli(engine: Engine, database_url: str) -> Cli:
    return Cli(database_url)
