"""registration options: the event's questions on registration, and their answers (issue 15)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 03:10:00.000000

Like the volunteer options (select, multi, text, number); the registration document now shows
the answers, so its declaration is reinstalled and every registration queued.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from regdesk.documents import triggers
from regdesk.models import DOCUMENTS

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DECLARED = {"registration": "be923a39410cc34f"}
REINSTALLED = [document for document in DOCUMENTS if document.kind in DECLARED]
NEW_TABLES = ("registration_options", "registration_option_values")


def upgrade() -> None:
    op.create_table(
        "registration_options",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("choices", sa.JSON(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "type IN ('select', 'multi', 'text', 'number')",
            name=op.f("ck_registration_options_type"),
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_registration_options_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registration_options")),
        sa.UniqueConstraint("event_id", "name", name=op.f("uq_registration_options_event_id_name")),
    )
    op.create_table(
        "registration_option_values",
        sa.Column("registration_id", sa.Integer(), nullable=False),
        sa.Column("option_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["option_id"],
            ["registration_options.id"],
            name=op.f("fk_registration_option_values_option_id_registration_options"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["registration_id"],
            ["registrations.id"],
            name=op.f("fk_registration_option_values_registration_id_registrations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "registration_id", "option_id", name=op.f("pk_registration_option_values")
        ),
    )
    triggers.reinstall(op.get_bind(), REINSTALLED)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    triggers.uninstall(op.execute, dialect, REINSTALLED, drop_tables=False)
    op.drop_table("registration_option_values")
    op.drop_table("registration_options")
    # The declaration as 0009 installed it: without the tables dropped here.
    before = [document.without(NEW_TABLES) for document in REINSTALLED]
    triggers.install(op.execute, dialect, before, create_tables=False)
