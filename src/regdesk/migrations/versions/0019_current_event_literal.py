"""events: SQLite's uq_events_current on `is_current = TRUE`, as the hot reads ask for it

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 20:00:00.000000

The reads on every request's path find the current event with `is_current = TRUE`
(`events.models.CURRENT_EVENT_ID`), a literal, where they bound a parameter: SQLite compiles a
statement again at every run when a value bound to it could change its plan, and a parameter
compared with a partial index's column could. SQLite uses a partial index only for a WHERE that
repeats the index's own, so its index moves from `is_current = 1` to `is_current = TRUE` (the
same rows: SQLite's TRUE is 1). PostgreSQL's, on `is_current`, already serves that query and
is left as it is. Dropping and making an index of a row a convention copies no table.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _index_on(predicate: str) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.drop_index("uq_events_current", table_name="events")
    op.create_index(
        "uq_events_current",
        "events",
        ["is_current"],
        unique=True,
        sqlite_where=sa.text(predicate),
    )


def upgrade() -> None:
    _index_on("is_current = TRUE")


def downgrade() -> None:
    _index_on("is_current = 1")
