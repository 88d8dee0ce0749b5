"""Alembic environment: regdesk hands over an open connection (see regdesk.migrations.runner)."""

from __future__ import annotations

from alembic import context

from regdesk.models import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things
    compare_type=True,
    # SQLite's DDL is transactional too (regdesk's engine says when transactions begin): one
    # transaction for the whole upgrade on both databases, so a failed one changes nothing.
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
