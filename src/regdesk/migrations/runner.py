"""Running the Alembic migrations from regdesk's own code (`regdesk db upgrade`, `serve`).
Alembic is imported only when there is something for it to do: a database already at head is
told so by migrations/revisions.py, which reads without it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, text

from regdesk import documents
from regdesk.db import write_session
from regdesk.documents.refresh import refresh as refresh_documents
from regdesk.migrations.revisions import schema_state
from regdesk.models import DOCUMENTS

if TYPE_CHECKING:
    from alembic.config import Config

HERE = Path(__file__).parent
# Any fixed number: PostgreSQL advisory lock held while migrating, so that several
# processes or hosts starting together migrate once, one after the other. On SQLite the
# migration's transaction takes the write lock when it begins (`regdesk_write`: BEGIN
# IMMEDIATE), to the same end: a second process waits, then finds the schema at head.
MIGRATION_LOCK_ID = 0x7265_6764  # "regd"


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    if revision != "head" or not schema_state(engine).is_current:
        _migrate(engine, revision)
    if revision == "head":
        # Render the record documents a migration queued (installing one queues every record).
        documents.install(DOCUMENTS)
        with write_session(engine) as session:
            refresh_documents(session)


def _migrate(engine: Engine, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    with engine.connect().execution_options(regdesk_write=True) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK_ID})
            connection.commit()
        try:
            config.attributes["connection"] = connection
            with _sqlite_foreign_keys_checked_at_commit(connection):
                command.upgrade(config, revision)
        finally:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_unlock(:id)"), {"id": MIGRATION_LOCK_ID}
                )
                connection.commit()


def downgrade(engine: Engine, revision: str) -> None:
    """Back to `revision` (`base`: an empty schema), undoing each revision on the way."""
    from alembic import command

    config = alembic_config()
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        with _sqlite_foreign_keys_checked_at_commit(connection):
            command.downgrade(config, revision)


@contextmanager
def _sqlite_foreign_keys_checked_at_commit(connection: Connection) -> Iterator[None]:
    """Commit what the block migrated. On SQLite, foreign keys are off meanwhile and checked
    before the commit: Alembic's batch mode rebuilds a table (copy, drop the old, rename), and
    the drop's ON DELETE CASCADE would empty every table referring to it (0005 so deleted
    every OAuth grant, token and code of a database made before it)."""
    if connection.dialect.name != "sqlite":
        yield
        connection.commit()
        return
    driver = connection.connection.driver_connection
    assert driver is not None, "the connection is open"
    driver.execute("PRAGMA foreign_keys = OFF")  # before the transaction: SQLite ignores it in one
    try:
        yield
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"the migration left rows referring to missing rows: {broken[:5]}")
        connection.commit()
    finally:
        connection.rollback()  # what did not commit, so that the next pragma takes effect
        driver.execute("PRAGMA foreign_keys = ON")


def new_revision(engine: Engine, message: str) -> None:
    """Write a new revision from the difference between the models and `engine`'s schema."""
    from alembic import command

    config = alembic_config()
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.revision(config, message=message, autogenerate=True)
