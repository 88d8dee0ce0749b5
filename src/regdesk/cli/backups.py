"""`regdesk backup` and `regdesk restore`: the whole database into a file, and back into an
empty database (regdesk.backups; docs/operations.md says how to run them on a schedule)."""

from __future__ import annotations

from pathlib import Path

import click

from regdesk.cli import Context, emit, json_option, main, pass_context


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE when it exists.")
@json_option
@pass_context
def backup(context: Context, file: Path, force: bool, as_json: bool) -> None:
    """Back up the database into FILE while the service keeps serving (SQLite: its online
    backup; PostgreSQL: pg_dump's custom format, pg_dump on PATH)."""
    from regdesk.backups import DATABASE_NAMES, BackupRefused, back_up

    try:
        made = back_up(context.settings.database_url, file, force=force)
    except BackupRefused as exc:
        raise click.ClickException(str(exc)) from None
    emit(
        as_json,
        made.as_json(),
        f"backed up the {DATABASE_NAMES[made.database]} database (schema revision {made.revision}) "
        f"into {made.file}, {made.size:,} bytes",
    )


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@json_option
@pass_context
def restore(context: Context, file: Path, as_json: bool) -> None:
    """Restore the backup FILE into the configured database, which must be empty."""
    from regdesk.backups import BackupRefused
    from regdesk.backups import restore as restore_backup

    try:
        restored = restore_backup(context.settings.database_url, file)
    except BackupRefused as exc:
        raise click.ClickException(str(exc)) from None
    schema = restored.schema
    done = f"restored {file}: schema revision {schema.current}"
    if restored.upgrade_needed:
        after = f"older than this regdesk's {schema.head}: run `regdesk db upgrade` before serving."
    elif not schema.known:
        after = "unknown to this regdesk: a newer release made it; serve it with that release."
    else:
        after = "this regdesk's own: ready to serve."
    emit(as_json, restored.as_json(), f"{done}, {after}")
