"""products, orders and registrations (registrations.md, issue 15)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 01:26:25.039675

One live registration per user and event is a partial unique index (ended_at IS NULL) on
both databases; an order number is unique.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "products",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("price", sa.Integer(), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=True),
        sa.Column("opens_at", sa.DateTime(), nullable=True),
        sa.Column("closes_at", sa.DateTime(), nullable=True),
        sa.Column("public", sa.Boolean(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("capacity IS NULL OR capacity >= 0", name=op.f("ck_products_capacity")),
        sa.CheckConstraint("price >= 0", name=op.f("ck_products_price")),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_products_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_products")),
        sa.UniqueConstraint("event_id", "name", name=op.f("uq_products_event_id_name")),
    )
    op.create_table(
        "registration_flags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("short_name", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_registration_flags_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registration_flags")),
        sa.UniqueConstraint(
            "event_id", "short_name", name=op.f("uq_registration_flags_event_id_short_name")
        ),
    )
    op.create_table(
        "orders",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("number", sa.String(length=20), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("product_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("payment_method", sa.String(length=16), nullable=True),
        sa.Column("payment_reference", sa.String(length=200), nullable=True),
        sa.Column("paid_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(
            "payment_method IS NULL OR payment_method IN ('desk', 'transfer', 'external', 'comp')",
            name=op.f("ck_orders_payment_method"),
        ),
        sa.CheckConstraint(
            "status IN ('unpaid', 'paid', 'cancelled', 'refunded')", name=op.f("ck_orders_status")
        ),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_orders_amount")),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name=op.f("fk_orders_event_id_events"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["product_id"],
            ["products.id"],
            name=op.f("fk_orders_product_id_products"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_orders_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orders")),
        sa.UniqueConstraint("number", name=op.f("uq_orders_number")),
    )
    op.create_index("ix_orders_product_id_status", "orders", ["product_id", "status"], unique=False)
    op.create_index("ix_orders_user_id", "orders", ["user_id"], unique=False)
    op.create_table(
        "registrations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("order_id", sa.Integer(), nullable=False),
        sa.Column("badge_name", sa.String(length=100), nullable=True),
        sa.Column("ticket_code", sa.String(length=64), nullable=False),
        sa.Column("checked_in_at", sa.DateTime(), nullable=True),
        sa.Column("checked_in_by", sa.Integer(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["checked_in_by"],
            ["users.id"],
            name=op.f("fk_registrations_checked_in_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_registrations_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["orders.id"],
            name=op.f("fk_registrations_order_id_orders"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_registrations_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registrations")),
        sa.UniqueConstraint("order_id", name=op.f("uq_registrations_order_id")),
        sa.UniqueConstraint("ticket_code", name=op.f("uq_registrations_ticket_code")),
    )
    op.create_index(
        "ix_registrations_event_id_id", "registrations", ["event_id", "id"], unique=False
    )
    op.create_index("ix_registrations_user_id", "registrations", ["user_id"], unique=False)
    op.create_index(
        "uq_registrations_live",
        "registrations",
        ["event_id", "user_id"],
        unique=True,
        sqlite_where=sa.text("ended_at IS NULL"),
        postgresql_where=sa.text("ended_at IS NULL"),
    )
    op.create_table(
        "registration_flag_links",
        sa.Column("registration_id", sa.Integer(), nullable=False),
        sa.Column("flag_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flag_id"],
            ["registration_flags.id"],
            name=op.f("fk_registration_flag_links_flag_id_registration_flags"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["registration_id"],
            ["registrations.id"],
            name=op.f("fk_registration_flag_links_registration_id_registrations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "registration_id", "flag_id", name=op.f("pk_registration_flag_links")
        ),
    )


def downgrade() -> None:
    op.drop_table("registration_flag_links")
    op.drop_index(
        "uq_registrations_live",
        table_name="registrations",
        sqlite_where=sa.text("ended_at IS NULL"),
        postgresql_where=sa.text("ended_at IS NULL"),
    )
    op.drop_index("ix_registrations_user_id", table_name="registrations")
    op.drop_index("ix_registrations_event_id_id", table_name="registrations")
    op.drop_table("registrations")
    op.drop_index("ix_orders_user_id", table_name="orders")
    op.drop_index("ix_orders_product_id_status", table_name="orders")
    op.drop_table("orders")
    op.drop_table("registration_flags")
    op.drop_table("products")
