"""Where a database's schema is, beside where this code's migrations end, read without Alembic:
a process that finds its database current (`regdesk serve` on every start but the first after
an upgrade, the read-only commands, /readyz) never imports it, 10 MB and half a second of its
start. tests/migrations holds these readings equal to Alembic's own."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, inspect, text

VERSIONS = Path(__file__).parent / "versions"
VERSION_TABLE = "alembic_version"  # Alembic's, and its column version_num


@cache
def revisions() -> dict[str, str | None]:
    """Each revision of this code's migrations and the one it follows (None: the first), read
    from the scripts' `revision` and `down_revision`, as Alembic reads them."""
    found: dict[str, str | None] = {}
    for script in sorted(VERSIONS.glob("*.py")):
        names: dict[str, object] = {}
        for statement in ast.parse(script.read_text()).body:
            target: ast.expr
            if isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
                names[target.id] = ast.literal_eval(value)
        revision, down = names["revision"], names.get("down_revision")
        assert isinstance(revision, str), script
        assert down is None or isinstance(down, str), script
        found[revision] = down
    return found


def head_revision() -> str | None:
    """The revision no other follows (the migrations are one line: a test checks)."""
    followed = set(revisions().values())
    heads = [revision for revision in revisions() if revision not in followed]
    assert len(heads) <= 1, f"more than one head: {heads}"
    return heads[0] if heads else None


def current_revision(engine: Engine) -> str | None:
    """The database's revision; None when it has no schema."""
    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        found = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    assert len(found) <= 1, f"the database is at more than one revision: {found}"
    return str(found[0][0]) if found else None


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
    current = None if _no_sqlite_file(engine) else current_revision(engine)
    known = current is None or current in revisions()
    return SchemaState(current=current, head=head_revision(), known=known)


def _no_sqlite_file(engine: Engine) -> bool:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return False
    path = Path(database)
    return not path.exists() or path.stat().st_size == 0
