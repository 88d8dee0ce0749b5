"""webhooks: endpoints, their delivery log, and the changes triggers note for events (issue 18)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 09:00:00.000000

`webhook_changes` is written by triggers on volunteers and their department states (what a
record cannot tell: submitted, deleted, assigned, unassigned), only while an endpoint is
enabled, and emptied by the same transaction before it commits (regdesk.webhooks.capture).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENABLED = "EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled)"
NOTE = "INSERT INTO webhook_changes (event, volunteer_id, department_id) VALUES"

# (name, table, operation, SQLite's condition, the note), for each change noted.
TRIGGERS = (
    (
        "webhooks_volunteers_insert",
        "volunteers",
        "INSERT",
        "",
        "'volunteer-submitted', NEW.id, NULL",
    ),
    ("webhooks_volunteers_delete", "volunteers", "DELETE", "", "'volunteer-deleted', OLD.id, NULL"),
    (
        "webhooks_volunteer_department_states_insert",
        "volunteer_department_states",
        "INSERT",
        "NEW.state = 'assignment' AND ",
        "'volunteer-assigned', NEW.volunteer_id, NEW.department_id",
    ),
    (
        "webhooks_volunteer_department_states_delete",
        "volunteer_department_states",
        "DELETE",
        "OLD.state = 'assignment' AND ",
        "'volunteer-unassigned', OLD.volunteer_id, OLD.department_id",
    ),
)

POSTGRESQL_FUNCTION = f"""
CREATE FUNCTION webhooks_note_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT {ENABLED} THEN
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME = 'volunteers' THEN
    IF TG_OP = 'INSERT' THEN
      {NOTE} ('volunteer-submitted', NEW.id, NULL);
    ELSE
      {NOTE} ('volunteer-deleted', OLD.id, NULL);
    END IF;
  ELSIF TG_OP = 'INSERT' THEN
    IF NEW.state = 'assignment' THEN
      {NOTE} ('volunteer-assigned', NEW.volunteer_id, NEW.department_id);
    END IF;
  ELSIF OLD.state = 'assignment' THEN
    {NOTE} ('volunteer-unassigned', OLD.volunteer_id, OLD.department_id);
  END IF;
  RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("disabled_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["oauth_applications.id"],
            name=op.f("fk_webhook_endpoints_application_id_oauth_applications"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
    )
    op.create_index("ix_webhook_endpoints_application_id", "webhook_endpoints", ["application_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.String(length=64), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("jti", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("attempted_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name=op.f("fk_webhook_deliveries_endpoint_id_webhook_endpoints"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_endpoint_id_id", "webhook_deliveries", ["endpoint_id", "id"]
    )
    op.create_index("ix_webhook_deliveries_message_id", "webhook_deliveries", ["message_id"])
    op.create_table(
        "webhook_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("volunteer_id", sa.Integer(), nullable=False),
        sa.Column("department_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_changes")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(POSTGRESQL_FUNCTION)
        for name, table, operation, _, _ in TRIGGERS:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {operation} ON {table} FOR EACH ROW"
                " EXECUTE FUNCTION webhooks_note_change()"
            )
    else:
        for name, table, operation, condition, values in TRIGGERS:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {operation} ON {table} FOR EACH ROW"
                f" WHEN {condition}{ENABLED}"
                f" BEGIN {NOTE} ({values}); END"
            )


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, table, _, _, _ in TRIGGERS:
        op.execute(f"DROP TRIGGER {name}" + (f" ON {table}" if postgresql else ""))
    if postgresql:
        op.execute("DROP FUNCTION webhooks_note_change()")
    op.drop_table("webhook_changes")
    op.drop_index("ix_webhook_deliveries_message_id", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_endpoint_id_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhook_endpoints_application_id", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
