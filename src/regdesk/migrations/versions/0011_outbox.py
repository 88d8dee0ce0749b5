"""outbox: messages delivered after their transaction commits, e-mail first (issue 16)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 06:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("due_at", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'sent', 'failed')", name=op.f("ck_outbox_messages_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox_messages")),
    )
    op.create_index(
        "ix_outbox_messages_channel_status_due_at",
        "outbox_messages",
        ["channel", "status", "due_at"],
    )
    op.create_index("ix_outbox_messages_created_at", "outbox_messages", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_outbox_messages_created_at", table_name="outbox_messages")
    op.drop_index("ix_outbox_messages_channel_status_due_at", table_name="outbox_messages")
    op.drop_table("outbox_messages")
