"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 15:39:00.138465
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "departments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("publicly_visible", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_departments")),
        sa.UniqueConstraint("name", name=op.f("uq_departments_name")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=True),
        sa.Column("ends_on", sa.Date(), nullable=True),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
        sa.UniqueConstraint("name", name=op.f("uq_events_name")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(
            "uq_events_current",
            ["is_current"],
            unique=True,
            sqlite_where=sa.text("is_current = 1"),
            postgresql_where=sa.text("is_current"),
        )

    op.create_table(
        "instance_settings",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=512), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_instance_settings")),
    )
    op.create_table(
        "oauth_applications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("secret_hash", sa.String(length=200), nullable=False),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("obo_scopes", sa.String(length=1000), nullable=False),
        sa.Column("service_scopes", sa.String(length=1000), nullable=False),
        sa.Column("scopes_version", sa.Integer(), nullable=False),
        sa.Column("suspended", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("secret_rotated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_applications")),
    )
    op.create_table(
        "roles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("staff", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roles")),
        sa.UniqueConstraint("name", name=op.f("uq_roles_name")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("identity_verified", sa.Boolean(), nullable=False),
        sa.Column("first_name", sa.String(length=100), nullable=False),
        sa.Column("last_name", sa.String(length=100), nullable=False),
        sa.Column("preferred_name", sa.String(length=100), nullable=True),
        sa.Column("phone", sa.String(length=16), nullable=True),
        sa.Column("address_line1", sa.String(length=200), nullable=True),
        sa.Column("address_line2", sa.String(length=200), nullable=True),
        sa.Column("address_city", sa.String(length=100), nullable=True),
        sa.Column("address_state", sa.String(length=100), nullable=True),
        sa.Column("address_zipcode", sa.String(length=20), nullable=True),
        sa.Column("address_country", sa.String(length=2), nullable=True),
        sa.Column("born_at", sa.Date(), nullable=True),
        sa.Column("newsletter", sa.Boolean(), nullable=False),
        sa.Column("profile_picture_url", sa.String(length=2000), nullable=True),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    # Case-insensitive uniqueness of usernames and e-mails (decisions.md, Identifiers).
    op.create_index("uq_users_username_lower", "users", [sa.text("lower(username)")], unique=True)
    op.create_index("uq_users_email_lower", "users", [sa.text("lower(email)")], unique=True)
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("actor_user_id", sa.Integer(), nullable=True),
        sa.Column("target_type", sa.String(length=32), nullable=True),
        sa.Column("target_id", sa.String(length=64), nullable=True),
        sa.Column("ip_address", sa.String(length=45), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_user_id"],
            ["users.id"],
            name=op.f("fk_audit_events_actor_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index("ix_audit_events_action", ["action"], unique=False)
        batch_op.create_index("ix_audit_events_actor_user_id", ["actor_user_id"], unique=False)
        batch_op.create_index("ix_audit_events_occurred_at", ["occurred_at"], unique=False)
        batch_op.create_index("ix_audit_events_target", ["target_type", "target_id"], unique=False)

    op.create_table(
        "department_leads",
        sa.Column("department_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["department_id"],
            ["departments.id"],
            name=op.f("fk_department_leads_department_id_departments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_department_leads_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("department_id", "user_id", name=op.f("pk_department_leads")),
    )
    with op.batch_alter_table("department_leads", schema=None) as batch_op:
        batch_op.create_index("ix_department_leads_user_id", ["user_id"], unique=False)

    op.create_table(
        "event_options",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("choices", sa.JSON(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "type IN ('select', 'multi', 'text', 'number')", name=op.f("ck_event_options_type")
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_event_options_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_options")),
        sa.UniqueConstraint("event_id", "name", name=op.f("uq_event_options_event_id_name")),
    )
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=1000), nullable=False),
        sa.Column("app_scopes_version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_reason", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["oauth_applications.id"],
            name=op.f("fk_oauth_grants_application_id_oauth_applications"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_oauth_grants_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_grants")),
    )
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.create_index(
            "ix_oauth_grants_user_id_application_id", ["user_id", "application_id"], unique=False
        )

    op.create_table(
        "user_permissions",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_permissions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "name", name=op.f("pk_user_permissions")),
    )
    op.create_table(
        "user_roles",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role_id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("scope IN ('convention', 'global')", name=op.f("ck_user_roles_scope")),
        sa.ForeignKeyConstraint(
            ["role_id"], ["roles.id"], name=op.f("fk_user_roles_role_id_roles"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_user_roles_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", "role_id", name=op.f("pk_user_roles")),
    )
    with op.batch_alter_table("user_roles", schema=None) as batch_op:
        batch_op.create_index("ix_user_roles_role_id_user_id", ["role_id", "user_id"], unique=False)

    op.create_table(
        "volunteers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_volunteers_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_volunteers_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_volunteers")),
        sa.UniqueConstraint("event_id", "user_id", name=op.f("uq_volunteers_event_id_user_id")),
    )
    with op.batch_alter_table("volunteers", schema=None) as batch_op:
        batch_op.create_index("ix_volunteers_event_id_id", ["event_id", "id"], unique=False)

    op.create_table(
        "oauth_access_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("grant_id", sa.Integer(), nullable=True),
        sa.Column("scope", sa.String(length=1000), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["oauth_applications.id"],
            name=op.f("fk_oauth_access_tokens_application_id_oauth_applications"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_access_tokens_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_oauth_access_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_access_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_oauth_access_tokens_token_hash")),
    )
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.create_index(
            "ix_oauth_access_tokens_application_id", ["application_id"], unique=False
        )
        batch_op.create_index("ix_oauth_access_tokens_expires_at", ["expires_at"], unique=False)
        batch_op.create_index("ix_oauth_access_tokens_grant_id", ["grant_id"], unique=False)

    op.create_table(
        "oauth_authorization_codes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("scope", sa.String(length=1000), nullable=False),
        sa.Column("code_challenge", sa.String(length=128), nullable=True),
        sa.Column("code_challenge_method", sa.String(length=10), nullable=True),
        sa.Column("grant_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["oauth_applications.id"],
            name=op.f("fk_oauth_authorization_codes_application_id_oauth_applications"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_authorization_codes_grant_id_oauth_grants"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_oauth_authorization_codes_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_authorization_codes")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_oauth_authorization_codes_code_hash")),
    )
    with op.batch_alter_table("oauth_authorization_codes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_oauth_authorization_codes_expires_at", ["expires_at"], unique=False
        )

    op.create_table(
        "volunteer_contact_methods",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("volunteer_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.String(length=500), nullable=False),
        sa.Column("is_primary", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["volunteer_id"],
            ["volunteers.id"],
            name=op.f("fk_volunteer_contact_methods_volunteer_id_volunteers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_volunteer_contact_methods")),
        sa.UniqueConstraint(
            "volunteer_id",
            "position",
            name=op.f("uq_volunteer_contact_methods_volunteer_id_position"),
        ),
    )
    op.create_table(
        "volunteer_department_states",
        sa.Column("volunteer_id", sa.Integer(), nullable=False),
        sa.Column("department_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.CheckConstraint(
            "state IN ('experience', 'interest', 'avoid', 'assignment', 'request')",
            name=op.f("ck_volunteer_department_states_state"),
        ),
        sa.ForeignKeyConstraint(
            ["department_id"],
            ["departments.id"],
            name=op.f("fk_volunteer_department_states_department_id_departments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["volunteer_id"],
            ["volunteers.id"],
            name=op.f("fk_volunteer_department_states_volunteer_id_volunteers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "volunteer_id", "department_id", "state", name=op.f("pk_volunteer_department_states")
        ),
    )
    with op.batch_alter_table("volunteer_department_states", schema=None) as batch_op:
        batch_op.create_index(
            "ix_volunteer_department_states_department_id_state",
            ["department_id", "state"],
            unique=False,
        )

    op.create_table(
        "volunteer_option_values",
        sa.Column("volunteer_id", sa.Integer(), nullable=False),
        sa.Column("option_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["option_id"],
            ["event_options.id"],
            name=op.f("fk_volunteer_option_values_option_id_event_options"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["volunteer_id"],
            ["volunteers.id"],
            name=op.f("fk_volunteer_option_values_volunteer_id_volunteers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "volunteer_id", "option_id", name=op.f("pk_volunteer_option_values")
        ),
    )
    op.create_table(
        "oauth_refresh_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("grant_id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=1000), nullable=False),
        sa.Column("access_token_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("consumed_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["access_token_id"],
            ["oauth_access_tokens.id"],
            name=op.f("fk_oauth_refresh_tokens_access_token_id_oauth_access_tokens"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_refresh_tokens_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_refresh_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_oauth_refresh_tokens_token_hash")),
    )
    with op.batch_alter_table("oauth_refresh_tokens", schema=None) as batch_op:
        batch_op.create_index("ix_oauth_refresh_tokens_grant_id", ["grant_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("oauth_refresh_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_refresh_tokens_grant_id")

    op.drop_table("oauth_refresh_tokens")
    op.drop_table("volunteer_option_values")
    with op.batch_alter_table("volunteer_department_states", schema=None) as batch_op:
        batch_op.drop_index("ix_volunteer_department_states_department_id_state")

    op.drop_table("volunteer_department_states")
    op.drop_table("volunteer_contact_methods")
    with op.batch_alter_table("oauth_authorization_codes", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_authorization_codes_expires_at")

    op.drop_table("oauth_authorization_codes")
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_access_tokens_grant_id")
        batch_op.drop_index("ix_oauth_access_tokens_expires_at")
        batch_op.drop_index("ix_oauth_access_tokens_application_id")

    op.drop_table("oauth_access_tokens")
    with op.batch_alter_table("volunteers", schema=None) as batch_op:
        batch_op.drop_index("ix_volunteers_event_id_id")

    op.drop_table("volunteers")
    with op.batch_alter_table("user_roles", schema=None) as batch_op:
        batch_op.drop_index("ix_user_roles_role_id_user_id")

    op.drop_table("user_roles")
    op.drop_table("user_permissions")
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_grants_user_id_application_id")

    op.drop_table("oauth_grants")
    op.drop_table("event_options")
    with op.batch_alter_table("department_leads", schema=None) as batch_op:
        batch_op.drop_index("ix_department_leads_user_id")

    op.drop_table("department_leads")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_events_target")
        batch_op.drop_index("ix_audit_events_occurred_at")
        batch_op.drop_index("ix_audit_events_actor_user_id")
        batch_op.drop_index("ix_audit_events_action")

    op.drop_table("audit_events")
    op.drop_index("uq_users_email_lower", table_name="users")
    op.drop_index("uq_users_username_lower", table_name="users")
    op.drop_table("users")
    op.drop_table("roles")
    op.drop_table("oauth_applications")
    op.drop_table("instance_settings")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_events_current",
            sqlite_where=sa.text("is_current = 1"),
            postgresql_where=sa.text("is_current"),
        )

    op.drop_table("events")
    op.drop_table("departments")
