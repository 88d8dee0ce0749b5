"""the key store and the desk's searches (issue 17)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 09:00:00.000000

`signing_keys` holds the instance's signing keys (regdesk.keys), one in use per purpose: the
ticket key signs a registration's code when its ticket is shown (registrations/ticket_codes.py),
so no code changes here. The desk finds a badge name by its start (an index on
lower(badge_name)), and people's registrations of the event by user and event.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = sa.text("retired_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("algorithm", sa.String(length=16), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("private_key_encrypted", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("retired_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kid", name=op.f("pk_signing_keys")),
    )
    op.create_index(
        "uq_signing_keys_active",
        "signing_keys",
        ["purpose"],
        unique=True,
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.create_index(
        "ix_registrations_event_id_badge_name_lower",
        "registrations",
        ["event_id", sa.text("lower(badge_name)")],
    )
    # The desk finds people, then their registrations of the event: by both columns, so that
    # no database prefers reading every registration of the event instead.
    op.create_index("ix_registrations_user_id_event_id", "registrations", ["user_id", "event_id"])
    op.drop_index("ix_registrations_user_id", table_name="registrations")


def downgrade() -> None:
    op.create_index("ix_registrations_user_id", "registrations", ["user_id"])
    op.drop_index("ix_registrations_user_id_event_id", table_name="registrations")
    op.drop_index("ix_registrations_event_id_badge_name_lower", table_name="registrations")
    op.drop_index(
        "uq_signing_keys_active",
        table_name="signing_keys",
        sqlite_where=ACTIVE,
        postgresql_where=ACTIVE,
    )
    op.drop_table("signing_keys")
