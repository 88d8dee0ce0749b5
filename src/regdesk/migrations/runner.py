"""Running the Alembic migrations from regdesk's own code (`regdesk db upgrade`, `serve`), and
telling, without changing anything, whether a database's schema is the one the code needs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from regdesk import documents
from regdesk.db import write_session
from regdesk.documents.refresh import refresh as refresh_documents
from regdesk.models import DOCUMENTS

HERE = Path(__file__).parent
# Any fixed number: PostgreSQL advisory lock held while migrating, so that several
# processes or hosts starting together migrate once, one after the other. On SQLite the
# migration's transaction takes the write lock when it begins (`regdesk_write`: BEGIN
# IMMEDIATE), to the same end: a second process waits, then finds the schema at head.
MIGRATION_LOCK_ID = 0x7265_6764  # "regd"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
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
    if revision == "head":
        # Render the record documents a migration queued (installing one queues every record).
        documents.install(DOCUMENTS)
        with write_session(engine) as session:
            refresh_documents(session)


def downgrade(engine: Engine, revision: str) -> None:
    """Back to `revision` (`base`: an empty schema), undoing each revision on the way."""
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
    config = alembic_config()
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.revision(config, message=message, autogenerate=True)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema is (`current`; None when it has none) and where this code's
    migrations end (`head`)."""

    current: str | None
    head: str | None
    known: bool  # `current` is None or one of this code's revisions: `upgrade` reaches head

    @property
    def is_current(self) -> bool:
        return self.current == self.head


def schema_state(engine: Engine) -> SchemaState:
    """The database's revision beside the code's, read without writing anything: no table, no
    row, and no SQLite file (connecting to a missing or empty one would create it)."""
    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    current = None if _no_sqlite_file(engine) else current_revision(engine)
    known = current is None or any(r.revision == current for r in script.walk_revisions())
    return SchemaState(current=current, head=head, known=known)


def _no_sqlite_file(engine: Engine) -> bool:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return False
    path = Path(database)
    return not path.exists() or path.stat().st_size == 0
