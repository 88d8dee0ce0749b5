"""Commands that only read never change a database, its schema included (operator.md, Command
line): on a database whose schema is behind the code's, or empty, they say so on stderr and exit
non-zero, leaving it as it was, byte for byte (SQLite) or row for row (PostgreSQL)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from regdesk.db import make_engine
from regdesk.migrations.revisions import SchemaState, head_revision, schema_state
from regdesk.migrations.runner import upgrade
from tests.conftest import Cli

# Every command that only reads: a new one (`mail list`, `webhooks list`) gets a row here.
# FILE stands for a file in the test's own directory.
READ_ONLY_COMMANDS = [
    ["export"],
    ["export", "FILE"],
    ["apps", "list"],
    ["apps", "list", "--json"],
    ["apps", "show", "1", "--json"],
    ["audit"],
    ["audit", "--json", "--action", "app.created"],
    ["mail", "list"],
    ["mail", "list", "--json"],
    ["webhooks", "list"],
    ["webhooks", "list", "1", "--json"],
]


def arguments(command: list[str], directory: Path) -> list[str]:
    return [str(directory / "export.json") if arg == "FILE" else arg for arg in command]


def snapshot(database_url: str) -> object:
    """All that a database is: a SQLite file's bytes and the files beside it (without
    connecting, which would create it), or every PostgreSQL table's columns and rows."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = Path(url.database or "")
        beside = sorted(p.name for p in path.parent.glob(f"{path.name}*"))
        return beside, path.read_bytes() if path.exists() else None
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            columns: dict[str, list[str]] = defaultdict(list)
            for table, column in connection.execute(COLUMNS):
                columns[table].append(column)
            quote = connection.dialect.identifier_preparer.quote
            return {
                table: (
                    names,
                    sorted(
                        repr(tuple(row))
                        for row in connection.exec_driver_sql(f"SELECT * FROM {quote(table)}")
                    ),
                )
                for table, names in columns.items()
            }
    finally:
        engine.dispose()


# The schema's tables and their columns, in one query of the catalog (reflecting the schema
# through SQLAlchemy asked it table by table: 100 ms a snapshot, two snapshots a test).
COLUMNS = text(
    "SELECT table_name, column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
)


def migrate(database_url: str, revision: str = "head") -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, revision)
    finally:
        engine.dispose()


@pytest.fixture(params=[None, "0004"], ids=["no schema", "at 0004"])
def behind(request: pytest.FixtureRequest, database_url: str) -> str | None:
    """Where the database's schema is: nowhere (an empty database), or an older revision."""
    revision: str | None = request.param
    if revision is not None:
        migrate(database_url, revision)
    return revision


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=" ".join)
def test_on_a_schema_behind_a_read_only_command_says_so_and_changes_nothing(
    database_url: str, behind: str | None, command: list[str], tmp_path: Path
) -> None:
    before = snapshot(database_url)
    result = Cli(database_url)(*arguments(command, tmp_path))
    assert result.exit_code == 1
    assert result.stdout == ""
    where = "has no schema yet" if behind is None else f"is at schema revision {behind}"
    assert where in result.stderr
    assert f"needs revision {head_revision()}" in result.stderr
    assert "Run `regdesk db upgrade`" in result.stderr
    assert snapshot(database_url) == before
    assert not (tmp_path / "export.json").exists()


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=" ".join)
def test_on_a_current_schema_a_read_only_command_reads_and_changes_nothing(
    engine: Engine, database_url: str, command: list[str], tmp_path: Path
) -> None:
    """On a database at head (`engine`'s: a copy of one the migrations brought there)."""
    cli = Cli(database_url)
    cli.ok("apps", "create", "--name", "Clock")
    before = snapshot(database_url)
    cli.ok(*arguments(command, tmp_path))
    assert snapshot(database_url) == before


def test_an_empty_sqlite_file_has_no_schema_and_stays_empty(tmp_path: Path) -> None:
    path = tmp_path / "regdesk.sqlite3"
    path.touch()  # as an organizer might before the first `regdesk db upgrade`
    result = Cli(f"sqlite:///{path}")("apps", "list")
    assert result.exit_code == 1
    assert "has no schema yet" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["regdesk.sqlite3"]
    assert path.read_bytes() == b""


def test_a_schema_a_newer_regdesk_migrated_is_refused_without_advice_to_upgrade(
    engine: Engine, database_url: str
) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()  # SQLite's file as it is on disk, before its bytes are read
    before = snapshot(database_url)
    result = Cli(database_url)("audit")
    assert result.exit_code == 1
    assert "at schema revision 9999, which this regdesk does not know" in result.stderr
    assert "db upgrade" not in result.stderr
    assert snapshot(database_url) == before


def test_schema_state_tells_where_a_database_is_without_writing(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        before = snapshot(database_url)
        assert schema_state(engine) == SchemaState(current=None, head=head_revision(), known=True)
        assert snapshot(database_url) == before
        upgrade(engine, "0004")
        assert schema_state(engine) == SchemaState(current="0004", head=head_revision(), known=True)
        assert not schema_state(engine).is_current
        upgrade(engine)
        assert schema_state(engine).is_current
    finally:
        engine.dispose()
