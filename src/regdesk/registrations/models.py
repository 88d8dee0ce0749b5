"""Products, orders and registrations (registrations.md).

A product is what can be bought for the event; an order is one purchase of one product by one
user; a registration is that user's attendance, made with the order and live while the order
is unpaid or paid. The database holds the two rules that must never bend: an order number is
unique, and a user has at most one live registration per event (a partial unique index).
Capacity is held by the service, under a lock on the product (registrations/ordering.py).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class OrderStatus(StrEnum):
    UNPAID = "unpaid"
    PAID = "paid"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


LIVE_STATUSES = (OrderStatus.UNPAID, OrderStatus.PAID)  # an order that holds its place


class PaymentMethod(StrEnum):
    DESK = "desk"
    TRANSFER = "transfer"
    EXTERNAL = "external"  # a shop elsewhere
    COMP = "comp"  # complimentary


def _one_of(column: str, values: type[StrEnum]) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


class Product(Base):
    __tablename__ = "products"
    __table_args__ = (
        UniqueConstraint("event_id", "name"),
        CheckConstraint("price >= 0", name="price"),
        CheckConstraint("capacity IS NULL OR capacity >= 0", name="capacity"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    display_name: Mapped[str | None] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    price: Mapped[int] = mapped_column(Integer)  # minor units of the instance's currency
    capacity: Mapped[int | None] = mapped_column(Integer)  # None: unlimited
    opens_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    closes_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    public: Mapped[bool] = mapped_column(Boolean, default=True)  # False: only staff sell it
    position: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = (
        CheckConstraint(_one_of("status", OrderStatus), name="status"),
        CheckConstraint(
            f"payment_method IS NULL OR {_one_of('payment_method', PaymentMethod)}",
            name="payment_method",
        ),
        CheckConstraint("amount >= 0", name="amount"),
        # What holds a product's places: its live orders, counted under the product's lock.
        Index("ix_orders_product_id_status", "product_id", "status"),
        Index("ix_orders_user_id", "user_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Decimal digits a person can read out (registrations.md: a client compares int(orderId)).
    number: Mapped[str] = mapped_column(String(20), unique=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id", ondelete="RESTRICT"))
    status: Mapped[str] = mapped_column(String(16), default=OrderStatus.UNPAID)
    amount: Mapped[int] = mapped_column(Integer)
    currency: Mapped[str] = mapped_column(String(3))
    payment_method: Mapped[str | None] = mapped_column(String(16))
    payment_reference: Mapped[str | None] = mapped_column(String(200))
    paid_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Registration(Base):
    __tablename__ = "registrations"
    __table_args__ = (
        # One live registration per user and event, whoever makes it: a partial unique index.
        Index(
            "uq_registrations_live",
            "event_id",
            "user_id",
            unique=True,
            sqlite_where=text("ended_at IS NULL"),
            postgresql_where=text("ended_at IS NULL"),
        ),
        # Search pages through one event in id order (keyset pagination).
        Index("ix_registrations_event_id_id", "event_id", "id"),
        # A user's registrations, of one event (the desk finds people, then theirs).
        Index("ix_registrations_user_id_event_id", "user_id", "event_id"),
        # The desk finds a badge name of the event by its start (regdesk.desk.search).
        Index(
            "ix_registrations_event_id_badge_name_lower",
            "event_id",
            func.lower(literal_column("badge_name")),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id", ondelete="CASCADE"), unique=True)
    badge_name: Mapped[str | None] = mapped_column(String(100))
    # Its ticket, shown signed (registrations/ticket_codes.py); numbers.py makes it.
    ticket_code: Mapped[str] = mapped_column(String(64), unique=True)
    checked_in_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    checked_in_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # When its badge was last printed (the desk's "Mark printed", or a batch); who did it is
    # in the audit log (regdesk.desk.badges).
    badge_printed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # When its order was cancelled or refunded: no longer live, its place freed.
    ended_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RegistrationFlag(Base):
    """An organizer's mark on registrations (registrations.md: `{id, shortName}`)."""

    __tablename__ = "registration_flags"
    __table_args__ = (UniqueConstraint("event_id", "short_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    short_name: Mapped[str] = mapped_column(String(100))


class RegistrationFlagLink(Base):
    __tablename__ = "registration_flag_links"

    registration_id: Mapped[int] = mapped_column(
        ForeignKey("registrations.id", ondelete="CASCADE"), primary_key=True
    )
    flag_id: Mapped[int] = mapped_column(
        ForeignKey("registration_flags.id", ondelete="CASCADE"), primary_key=True
    )


class RegistrationOption(Base):
    """A question the event asks on registration (registrations.md: select, multi, text,
    number, like the volunteer options): a T-shirt size, a dietary need."""

    __tablename__ = "registration_options"
    __table_args__ = (
        UniqueConstraint("event_id", "name"),
        CheckConstraint("type IN ('select', 'multi', 'text', 'number')", name="type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(16))
    # For select and multi: the allowed values (null: any value).
    choices: Mapped[list[str] | None] = mapped_column(JSON)
    position: Mapped[int] = mapped_column(Integer, default=0)


class RegistrationOptionValue(Base):
    """A registration's answer to one option: a number, a string or an array of strings."""

    __tablename__ = "registration_option_values"

    registration_id: Mapped[int] = mapped_column(
        ForeignKey("registrations.id", ondelete="CASCADE"), primary_key=True
    )
    option_id: Mapped[int] = mapped_column(
        ForeignKey("registration_options.id", ondelete="CASCADE"), primary_key=True
    )
    value: Mapped[Any] = mapped_column(JSON)
