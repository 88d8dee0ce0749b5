"""failed logins counted by what was typed, and by trusted browser (issue 13)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 23:00:00.000000

The rows live 15 minutes and only slow guessing down: the table is made anew rather than
converted (the old rows counted accounts, which the new throttle no longer does).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _create(key_column: str, *, with_device: bool) -> None:
    columns: list[sa.Column[object]] = [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(), nullable=False),
        sa.Column(key_column, sa.String(length=64), nullable=False),
        sa.Column("address_key", sa.String(length=64), nullable=False),
    ]
    if with_device:
        columns.append(sa.Column("device_key", sa.String(length=64), nullable=True))
    op.create_table(
        "login_failures", *columns, sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures"))
    )
    indexed = [key_column, "address_key", *(["device_key"] if with_device else [])]
    for column in indexed:
        op.create_index(
            f"ix_login_failures_{column}_occurred_at", "login_failures", [column, "occurred_at"]
        )
    op.create_index("ix_login_failures_occurred_at", "login_failures", ["occurred_at"])


def upgrade() -> None:
    op.drop_table("login_failures")
    _create("login_key", with_device=True)


def downgrade() -> None:
    op.drop_table("login_failures")
    _create("account_key", with_device=False)
