"""migrations/revisions.py reads the schema's place without Alembic, so that a process whose
database is current never loads it: its readings are Alembic's own."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from regdesk.migrations.revisions import current_revision, head_revision, revisions
from regdesk.migrations.runner import alembic_config, downgrade, upgrade
from tests import forkserver


def test_the_revisions_and_head_are_alembics() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert revisions() == {r.revision: r.down_revision for r in script.walk_revisions()}
    assert head_revision() == script.get_current_head()


def test_the_current_revision_is_alembics_at_base_midway_and_head(engine: Engine) -> None:
    def alembics() -> str | None:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    downgrade(engine, "base")
    assert current_revision(engine) is None
    assert alembics() is None
    for revision in ("0004", "head"):
        upgrade(engine, revision)
        assert current_revision(engine) == alembics()
    assert current_revision(engine) == head_revision()


def test_a_server_on_a_current_database_never_loads_alembic(
    database_url: str, tmp_path: Path
) -> None:
    """What `regdesk serve` does before it answers (the schema brought to head, the app made),
    on a database already at head: Alembic stays out of the process (10 MB of its memory).
    Each run is a process of its own, forked from the tests' fork server, which never has
    Alembic imported ahead (tests/forkserver/server.py refuses to start if it had)."""
    script = tmp_path / "serve_steps.py"
    script.write_text(_SERVE_STEPS)

    def serve_steps() -> list[str]:
        process = forkserver.popen(
            [str(script), database_url],
            env={**os.environ, "REGDESK_DATABASE_URL": database_url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
        return str(out.decode()).split()

    first, again = serve_steps(), serve_steps()
    assert first == ["migrated", "alembic"]  # a new database: Alembic's work
    assert again == ["migrated", "no-alembic"]


_SERVE_STEPS = textwrap.dedent(
    """
    import sys
    from regdesk.app import create_app
    from regdesk.config import load_settings
    from regdesk.db import make_engine
    from regdesk.migrations.runner import upgrade

    engine = make_engine(sys.argv[1])
    upgrade(engine)
    print("migrated")
    create_app(load_settings())
    print("alembic" if "alembic" in sys.modules else "no-alembic")
    engine.dispose()
    """
)
