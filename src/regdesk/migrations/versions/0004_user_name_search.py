"""indexes for finding users by the start of their names (the admin area's user search)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 20:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("first_name", "last_name", "preferred_name")


def upgrade() -> None:
    for column in COLUMNS:
        op.create_index(f"ix_users_{column}_lower", "users", [sa.text(f"lower({column})")])


def downgrade() -> None:
    for column in reversed(COLUMNS):
        op.drop_index(f"ix_users_{column}_lower", table_name="users")
