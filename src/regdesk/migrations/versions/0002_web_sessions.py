"""web sessions and login failures

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("ip_address", sa.String(length=45), nullable=True),
        sa.Column("user_agent", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_web_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        sa.UniqueConstraint("session_hash", name=op.f("uq_web_sessions_session_hash")),
    )
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_web_sessions_expires_at", ["expires_at"], unique=False)
        batch_op.create_index("ix_web_sessions_user_id", ["user_id"], unique=False)

    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(), nullable=False),
        sa.Column("account_key", sa.String(length=64), nullable=False),
        sa.Column("address_key", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index(
            "ix_login_failures_account_key_occurred_at",
            ["account_key", "occurred_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_login_failures_address_key_occurred_at",
            ["address_key", "occurred_at"],
            unique=False,
        )
        batch_op.create_index("ix_login_failures_occurred_at", ["occurred_at"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_occurred_at")
        batch_op.drop_index("ix_login_failures_address_key_occurred_at")
        batch_op.drop_index("ix_login_failures_account_key_occurred_at")

    op.drop_table("login_failures")
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_web_sessions_user_id")
        batch_op.drop_index("ix_web_sessions_expires_at")

    op.drop_table("web_sessions")
