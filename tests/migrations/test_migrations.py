"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, insert, inspect
from sqlalchemy.exc import IntegrityError

from regdesk.db import make_engine
from regdesk.events.models import Event
from regdesk.migrations.revisions import current_revision, head_revision
from regdesk.migrations.runner import downgrade, upgrade
from regdesk.models import metadata
from regdesk.users.models import User
from tests import forkserver


def test_upgrade_from_empty_reaches_head_and_matches_models(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        assert current_revision(engine) is None
        upgrade(engine)
        assert current_revision(engine) == head_revision()
        with engine.connect() as connection, warnings.catch_warnings():
            # SQLite cannot reflect expression indexes; Alembic warns and skips them.
            warnings.simplefilter("ignore", UserWarning)
            differences = compare_metadata(MigrationContext.configure(connection), metadata)
        assert differences == []
        assert set(inspect(engine).get_table_names()) >= set(metadata.tables)
    finally:
        engine.dispose()


def test_upgrade_downgrade_to_base_and_upgrade_again(database_url: str) -> None:
    """Every revision's downgrade undoes its upgrade, by the names the upgrade used."""
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        with engine.begin() as connection:
            connection.execute(insert(User).values(_user("fox", "fox@example.org")))
        downgrade(engine, "base")
        assert current_revision(engine) is None
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(engine)
        assert current_revision(engine) == head_revision()
        with engine.connect() as connection, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    finally:
        engine.dispose()


def test_processes_starting_together_migrate_one_after_the_other(database_url: str) -> None:
    """Several `regdesk` processes started at once on a new database (two servers behind a
    proxy, or a server and `db upgrade`) each bring the schema up, none fails: the first
    migrates, the others wait for it (PostgreSQL's advisory lock, SQLite's write lock) and find
    the schema at head."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env["REGDESK_DATABASE_URL"] = database_url
    regdesk = str(Path(sys.executable).with_name("regdesk"))
    processes = [
        forkserver.popen(
            [regdesk, "db", "upgrade"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    results = [process.communicate(timeout=120) for process in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], [err.decode() for _, err in results]
    engine = make_engine(database_url)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_upgrade_twice_is_harmless(engine: Engine) -> None:
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def _user(username: str, email: str) -> dict[str, object]:
    now = dt.datetime.now(dt.UTC)
    return {
        "username": username,
        "email": email,
        "first_name": "A",
        "last_name": "B",
        "verified": False,
        "identity_verified": False,
        "newsletter": False,
        "created_at": now,
        "updated_at": now,
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("fox", "fox@example.org"), ("other", "FOX@example.org")),
        (("fox", "fox@example.org"), ("FOX", "other@example.org")),
    ],
    ids=["email", "username"],
)
def test_usernames_and_emails_are_unique_whatever_their_case(
    engine: Engine, first: tuple[str, str], second: tuple[str, str]
) -> None:
    with engine.begin() as connection:
        connection.execute(insert(User).values(_user(*first)))
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(insert(User).values(_user(*second)))


def test_only_one_event_can_be_current(engine: Engine) -> None:
    now = dt.datetime.now(dt.UTC)
    with engine.begin() as connection:
        connection.execute(
            insert(Event),
            [
                {"name": "Past", "is_current": False, "created_at": now},
                {"name": "Older", "is_current": False, "created_at": now},
                {"name": "Now", "is_current": True, "created_at": now},
            ],
        )
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(insert(Event).values(name="Also now", is_current=True, created_at=now))
