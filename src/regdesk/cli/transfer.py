"""`regdesk import` and `regdesk export`: the organizer's data as one JSON document."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from regdesk.audit.service import Actor
from regdesk.cli import Context, emit, json_option, main, pass_context
from regdesk.transfer.document import ImportRejected


@main.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_context
def import_(context: Context, file: Path, as_json: bool) -> None:
    """Import a JSON document (or a CSV of users): all or nothing, and idempotent."""
    from regdesk.transfer.importer import import_document, read_document

    try:
        document = read_document(file)
        result = import_document(
            context.migrated_engine,
            document,
            actor=Actor.command_line(),
            phone_region=context.settings.default_phone_region,
            currency=context.settings.currency,
        )
    except ImportRejected as exc:
        if as_json:
            # operator.md: with --json, one document on stdout whatever happens; the reasons
            # are on stderr too, for a person watching the script.
            emit(True, rejection_document(exc), "")
        raise click.ClickException(f"{file}: nothing was imported.\n{exc}") from None
    emit(as_json, result.as_json(), result.summary())


def rejection_document(rejected: ImportRejected) -> dict[str, Any]:
    """What `import --json` prints when nothing was imported: each error by its position."""
    return {
        "imported": False,
        "errors": [
            {"position": position, "message": message} for position, message in rejected.errors
        ],
    }


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@pass_context
def export(context: Context, file: Path | None) -> None:
    """Write every record as the import document (to FILE, or to stdout)."""
    from regdesk.transfer.exporter import document_text, export_document

    text = document_text(export_document(context.read_only_engine))
    if file is None:
        sys.stdout.write(text)
        return
    _write_private_file(file, text)
    click.echo(f"exported to {file}", err=True)


def _write_private_file(path: Path, text: str) -> None:
    """Readable by its owner only (it holds personal data), and never left half-written."""
    fd, temporary = tempfile.mkstemp(dir=path.parent or Path("."), prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
