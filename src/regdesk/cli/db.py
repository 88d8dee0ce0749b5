"""`regdesk db`: the database schema."""

from __future__ import annotations

import click

from regdesk.cli import Context, main, pass_context


@main.group()
def db() -> None:
    """The database schema."""


@db.command("upgrade")
@pass_context
def db_upgrade(context: Context) -> None:
    """Migrate the schema to the newest revision (Alembic)."""
    from regdesk.migrations.revisions import current_revision

    click.echo(f"schema at revision {current_revision(context.migrated_engine)}")


@db.command("revision")
@click.option("-m", "--message", required=True, help="What the change is, in a few words.")
@pass_context
def db_revision(context: Context, message: str) -> None:
    """For developers: write a migration for what the models changed (review it!)."""
    from regdesk.migrations.runner import new_revision

    new_revision(context.migrated_engine, message)
