"""what a suspension or a scope's removal ends stays ended; codes found by user (issue 13)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 22:00:00.000000
"""

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("oauth_applications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tokens_valid_after", sa.DateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("scope_cutoffs", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )
    op.create_index(
        "ix_oauth_authorization_codes_user_id_application_id",
        "oauth_authorization_codes",
        ["user_id", "application_id"],
    )
    # An application suspended before this revision: its tokens and grants must not outlive
    # that either, as they would not have after it.
    applications = sa.table(
        "oauth_applications",
        sa.column("id", sa.Integer()),
        sa.column("suspended", sa.Boolean()),
        sa.column("tokens_valid_after", sa.DateTime()),
    )
    grants = sa.table(
        "oauth_grants",
        sa.column("application_id", sa.Integer()),
        sa.column("revoked_at", sa.DateTime()),
        sa.column("revoked_reason", sa.String()),
    )
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    suspended = sa.select(applications.c.id).where(applications.c.suspended == sa.true())
    op.execute(
        applications.update().where(applications.c.id.in_(suspended)).values(tokens_valid_after=now)
    )
    op.execute(
        grants.update()
        .where(grants.c.application_id.in_(suspended), grants.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_reason="application_suspended")
    )


def downgrade() -> None:
    op.drop_index(
        "ix_oauth_authorization_codes_user_id_application_id",
        table_name="oauth_authorization_codes",
    )
    with op.batch_alter_table("oauth_applications", schema=None) as batch_op:
        batch_op.drop_column("scope_cutoffs")
        batch_op.drop_column("tokens_valid_after")
