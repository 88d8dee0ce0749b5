"""OpenID Connect: applications' logout addresses and ID token algorithm; the sign-in behind
codes and grants (issue 19)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29 09:00:00.000000

A code carries the authorization request's `nonce`, when its user signed in (`auth_time`) and
a stable hash of their web session (`sid`); the grant made from it keeps the last two, so that
an ID token issued on refresh says the same. The OpenID signing keys live in the key store
(`signing_keys`, 0014) under their own purposes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("oauth_applications", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "post_logout_redirect_uris",
                sa.JSON(),
                nullable=False,
                server_default=sa.text("'[]'"),
            )
        )
        batch_op.add_column(
            sa.Column("id_token_alg", sa.String(length=8), nullable=False, server_default="RS256")
        )
    with op.batch_alter_table("oauth_authorization_codes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("nonce", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("auth_time", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("sid", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_oauth_authorization_codes_application_id_nonce",
        "oauth_authorization_codes",
        ["application_id", "nonce"],
    )
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("auth_time", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("sid", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.drop_column("sid")
        batch_op.drop_column("auth_time")
    op.drop_index(
        "ix_oauth_authorization_codes_application_id_nonce",
        table_name="oauth_authorization_codes",
    )
    with op.batch_alter_table("oauth_authorization_codes", schema=None) as batch_op:
        batch_op.drop_column("sid")
        batch_op.drop_column("auth_time")
        batch_op.drop_column("nonce")
    with op.batch_alter_table("oauth_applications", schema=None) as batch_op:
        batch_op.drop_column("id_token_alg")
        batch_op.drop_column("post_logout_redirect_uris")
