"""`regdesk backup` and `regdesk restore` as an organizer types them: what they write, what
they refuse, and that a refusal changes nothing."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from regdesk.cli import main
from regdesk.db import make_engine
from regdesk.migrations.revisions import head_revision
from regdesk.migrations.runner import upgrade
from tests.backups.support import database_of_its_own, every_row
from tests.conftest import BACKENDS, Cli
from tests.transfer.support import rich_document


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def filled(database_url: str, directory: Path) -> Cli:
    """The database holding the rich import document's records (users, roles, departments,
    volunteers, registrations) and an application: the regdesk command on it."""
    cli = Cli(database_url)
    document = directory / "records.json"
    document.write_text(json.dumps(rich_document()), encoding="utf-8")
    cli.ok("import", str(document))
    cli.ok("apps", "create", "--name", "Tool", "--service-scopes", "user:read")
    return cli


def test_a_backup_restores_into_an_empty_database_with_every_row(
    backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "regdesk.backup"
    with database_of_its_own(backend, tmp_path, migrated=True) as source:
        cli = filled(source, tmp_path)
        made = json.loads(cli.ok("backup", str(file), "--json").stdout)
        assert made == {
            "file": str(file),
            "size": file.stat().st_size,
            "database": backend,
            "revision": head_revision(),
        }
        assert stat.S_IMODE(file.stat().st_mode) == 0o600  # secrets and personal data
        with database_of_its_own(backend, tmp_path) as target:
            restored = json.loads(Cli(target).ok("restore", str(file), "--json").stdout)
            assert restored["revision"] == head_revision()
            assert restored["upgrade_needed"] is False
            copy = every_row(target)
            assert copy == every_row(source)
            assert len(copy["users"]) == len(rich_document()["users"])
    assert not list(tmp_path.glob(".regdesk.backup.*"))  # no half-written file left


def test_backup_refuses_an_existing_file_and_leaves_it_as_it_was(
    backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "regdesk.backup"
    file.write_bytes(b"last week's backup")
    with database_of_its_own(backend, tmp_path, migrated=True) as source:
        cli = Cli(source)
        refused = cli("backup", str(file), "--json")
        assert refused.exit_code == 1
        assert f"{file} exists" in refused.stderr
        assert "--force" in refused.stderr
        assert refused.stdout == ""
        assert file.read_bytes() == b"last week's backup"
        replaced = json.loads(cli.ok("backup", str(file), "--force", "--json").stdout)
        assert replaced["size"] == file.stat().st_size > len(b"last week's backup")
    assert not list(tmp_path.glob(".regdesk.backup.*"))


def test_restore_refuses_a_database_that_is_not_empty_and_leaves_it_as_it_was(
    backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "regdesk.backup"
    with (
        database_of_its_own(backend, tmp_path, migrated=True) as source,
        database_of_its_own(backend, tmp_path, migrated=True) as target,
    ):
        filled(source, tmp_path).ok("backup", str(file))
        Cli(target).ok(
            "users",
            "create",
            "--username",
            "fox",
            "--email",
            "fox@example.org",
            "--first-name",
            "Fae",
            "--last-name",
            "Fox",
            "--password",
            "plum-orchard-lantern-42",
        )
        before = every_row(target)
        refused = Cli(target)("restore", str(file))
        assert refused.exit_code == 1
        assert "not empty" in refused.stderr
        assert "alembic_version" in refused.stderr
        assert "audit_events" in refused.stderr
        assert "never merges" in refused.stderr
        assert every_row(target) == before


@pytest.mark.postgres
def test_restore_refuses_a_backup_of_the_other_kind_of_database(tmp_path: Path) -> None:
    file = tmp_path / "regdesk.backup"
    with database_of_its_own("sqlite", tmp_path, migrated=True) as source:
        Cli(source).ok("backup", str(file))
    with database_of_its_own("postgresql", tmp_path) as target:
        refused = Cli(target)("restore", str(file))
        assert refused.exit_code == 1
        assert "a backup of a SQLite database" in refused.stderr
        assert "is PostgreSQL" in refused.stderr
        assert every_row(target) == {}


def test_restore_refuses_a_file_that_is_not_a_backup(backend: str, tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a database")
    with database_of_its_own(backend, tmp_path) as target:
        refused = Cli(target)("restore", str(file))
        assert refused.exit_code == 1
        assert "not a regdesk backup" in refused.stderr
        assert every_row(target) == {}


def test_a_backup_of_an_older_release_restores_and_says_to_upgrade(
    backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "regdesk.backup"
    with database_of_its_own(backend, tmp_path) as source:
        engine = make_engine(source)
        upgrade(engine, "0001")
        engine.dispose()
        made = json.loads(Cli(source).ok("backup", str(file), "--json").stdout)
        assert made["revision"] == "0001"
        with database_of_its_own(backend, tmp_path) as target:
            said = Cli(target).ok("restore", str(file)).stdout
            assert "schema revision 0001" in said
            assert f"older than this regdesk's {head_revision()}" in said
            assert "regdesk db upgrade" in said
            Cli(target).ok("db", "upgrade")


@pytest.mark.postgres
def test_without_pg_dump_the_backup_says_what_to_install(tmp_path: Path) -> None:
    file = tmp_path / "regdesk.backup"
    with database_of_its_own("postgresql", tmp_path, migrated=True) as source:
        result = CliRunner().invoke(
            main,
            ["backup", str(file)],
            env={"REGDESK_DATABASE_URL": source, "PATH": str(tmp_path / "empty")},
        )
    assert result.exit_code == 1
    assert "pg_dump is not on PATH" in result.stderr
    assert "postgresql-client" in result.stderr
    assert not file.exists()


RECORDING = """#!/bin/sh
printf '%s\\n' "$@" > "{out}/$(basename "$0").arguments"
printf '%s' "$PGPASSWORD" > "{out}/$(basename "$0").password"
exec /usr/bin/$(basename "$0") "$@"
"""


@pytest.mark.postgres
def test_the_password_reaches_pg_dump_and_pg_restore_in_their_environment_only(
    tmp_path: Path,
) -> None:
    """Never on the command line, where `ps` shows it to every user of the machine."""
    programs = tmp_path / "bin"
    programs.mkdir()
    for name in ("pg_dump", "pg_restore"):
        script = programs / name
        script.write_text(RECORDING.format(out=tmp_path))
        script.chmod(0o755)
    password = "correct-horse-battery"
    file = tmp_path / "regdesk.backup"
    path = f"{programs}{os.pathsep}{os.environ['PATH']}"
    with (
        database_of_its_own("postgresql", tmp_path, migrated=True) as source,
        database_of_its_own("postgresql", tmp_path) as target,
    ):
        for url, command in ((source, "backup"), (target, "restore")):
            with_password = make_url(url).set(password=password)
            result = CliRunner().invoke(
                main,
                [command, str(file)],
                env={
                    "REGDESK_DATABASE_URL": with_password.render_as_string(hide_password=False),
                    "PATH": path,
                },
            )
            assert result.exit_code == 0, result.output + result.stderr
        for name in ("pg_dump", "pg_restore"):
            arguments = (tmp_path / f"{name}.arguments").read_text()
            assert password not in arguments
            assert "--dbname=postgresql://" in arguments
            assert (tmp_path / f"{name}.password").read_text() == password
        assert len(every_row(target)["alembic_version"]) == 1
