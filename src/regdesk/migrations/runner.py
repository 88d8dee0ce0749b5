"""Running the Alembic migrations from regdesk's own code (`regdesk db upgrade`, `serve`)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from regdesk import documents
from regdesk.db import write_session
from regdesk.documents.refresh import refresh as refresh_documents
from regdesk.models import DOCUMENTS

HERE = Path(__file__).parent
# Any fixed number: PostgreSQL advisory lock held while migrating, so that several
# processes or hosts starting together migrate once, one after the other.
MIGRATION_LOCK_ID = 0x7265_6764  # "regd"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    config = alembic_config()
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK_ID})
            connection.commit()
        try:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            connection.commit()
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
        command.downgrade(config, revision)
        connection.commit()


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
