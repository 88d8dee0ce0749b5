"""The triggers installed in each database are exactly those the declarations make
(regdesk.documents.triggers): a declaration changed without the migration that installs it,
or a trigger changed by hand, fails here."""

from __future__ import annotations

from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from regdesk.documents import triggers
from regdesk.migrations.runner import alembic_config
from regdesk.models import DOCUMENTS
from tests.documents.support import declared, installed


def test_the_installed_triggers_are_those_the_declarations_make(engine: Engine) -> None:
    assert installed(engine) == declared(engine)


def test_every_table_a_document_watches_exists(engine: Engine) -> None:
    with engine.connect() as connection:
        tables = set(engine.dialect.get_table_names(connection))
    for document in DOCUMENTS:
        assert document.records in tables
        assert document.table.name in tables
        for stale in document.stale:
            assert stale.table in tables, (document.kind, stale.table)


def newest_prints() -> dict[str, tuple[str, str]]:
    """Per kind of document: the newest revision that installs it, and the print it recorded."""
    found: dict[str, tuple[str, str]] = {}
    scripts = ScriptDirectory.from_config(alembic_config())
    for script in reversed(list(scripts.walk_revisions())):  # oldest first
        for kind, print_ in getattr(script.module, "DECLARED", {}).items():
            found[kind] = (script.revision, print_)
    return found


def test_each_declaration_is_the_one_its_newest_migration_installed() -> None:
    recorded = newest_prints()
    for document in DOCUMENTS:
        assert document.kind in recorded, f"no migration installs the {document.kind} document"
        revision, print_ = recorded[document.kind]
        assert print_ == triggers.fingerprint(document), (
            f"the {document.kind} document's declaration changed since revision {revision}: "
            "add a revision that calls documents.triggers.reinstall for it, with DECLARED = "
            f"{{{document.kind!r}: {triggers.fingerprint(document)!r}}}"
        )


def test_reinstalling_makes_the_same_triggers_and_queues_every_record(engine: Engine) -> None:
    """What a revision for a changed declaration calls: the triggers end as declared."""
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO users (username, email, verified, identity_verified, first_name,"
            " last_name, newsletter, created_at, updated_at) VALUES ('fox', 'fox@example.org',"
            " false, false, 'Fae', 'Fox', false, '2026-01-01', '2026-01-01')"
        )
        connection.exec_driver_sql("DELETE FROM document_queue")
        triggers.reinstall(connection, DOCUMENTS)
        queued = connection.execute(text("SELECT kind FROM document_queue")).scalars().all()
    assert queued == ["user"]
    test_the_installed_triggers_are_those_the_declarations_make(engine)
