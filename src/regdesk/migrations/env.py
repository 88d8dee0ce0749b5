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
)
with context.begin_transaction():
    context.run_migrations()
