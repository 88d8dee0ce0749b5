"""A user's own orders (registrations.md, API: `GET /api/users/current/orders`, the scope
pii:finance:read): every order of the current event, whatever its status, newest first."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.events.models import Event
from regdesk.registrations.models import Order, Product
from regdesk.registrations.schemas import render_order


def orders_of_user(db: Session, user_id: int) -> list[dict[str, Any]]:
    """The user's orders for the current event as the API shows them, newest first (cancelled
    and refunded ones too); none when there is no current event."""
    rows = db.execute(
        select(
            Order.number,
            Order.status,
            Order.product_id,
            Product.name.label("product_name"),
            Order.amount,
            Order.currency,
            Order.payment_method,
            Order.created_at,
            Order.paid_at,
        )
        .join(Product, Product.id == Order.product_id)
        .join(Event, Event.id == Order.event_id)
        .where(Order.user_id == user_id, Event.is_current.is_(True))
        .order_by(Order.created_at.desc(), Order.id.desc())
    )
    return [render_order(row) for row in rows]
