"""Ordering a product, and ending an order: the places a product has, never oversold.

Every way of registering someone (the attendee's page, the desk, the admin area, an import)
goes through `place_order`, in the caller's write transaction. The product's places are
counted under a lock on the product: SQLite's write transaction already holds the database's
one lock (`BEGIN IMMEDIATE`); PostgreSQL locks the product's row (`SELECT ... FOR UPDATE`), so
of N people racing for the last K places exactly K get an order. An unpaid order holds its
place; cancelling or refunding frees it.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

from sqlalchemy import exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.errors import Invalid
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import (
    LIVE_STATUSES,
    Order,
    OrderStatus,
    PaymentMethod,
    Product,
    Registration,
)
from regdesk.registrations.numbers import new_ticket_codes, order_number_digits

_TRIES = 20


_AN = {OrderStatus.CANCELLED: "an unpaid", OrderStatus.REFUNDED: "a paid"}


@dataclass(frozen=True)
class Placed:
    order: Order
    registration: Registration


def places_left(db: Session, product: Product) -> int | None:
    """How many more orders `product` takes (None: no limit)."""
    if product.capacity is None:
        return None
    return max(0, product.capacity - _live_orders(db, product.id))


def on_sale(product: Product, now: dt.datetime) -> bool:
    opened = product.opens_at is None or product.opens_at <= now
    return opened and (product.closes_at is None or now < product.closes_at)


def place_order(
    db: Session,
    actor: Actor,
    *,
    user_id: int,
    product_id: int,
    currency: str,
    badge_name: str | None = None,
    by_staff: bool = False,
    number: str | None = None,
) -> Placed:
    """An unpaid order of `product_id` for `user_id`, and the user's registration with it.

    Refused (Invalid, field `product`) when the product is not the current event's, not on
    sale, only for staff to sell (unless `by_staff`), or sold out; (field `user`) when the
    user already holds a live registration for the event.
    """
    event = current_event_for_writing(db)
    product = db.scalars(
        select(Product).where(Product.id == product_id).with_for_update()
    ).one_or_none()
    if product is None or product.event_id != event.id:
        raise Invalid({"product": "No such product."})
    now = utcnow()
    if not by_staff and not product.public:
        raise Invalid({"product": "This product is sold at the desk only."})
    if not by_staff and not on_sale(product, now):
        raise Invalid({"product": "This product is not on sale now."})
    if _has_live_registration(db, event.id, user_id):
        raise Invalid({"user": "Already registered for this event."})
    if product.capacity is not None and _live_orders(db, product.id) >= product.capacity:
        raise Invalid({"product": "Sold out."})
    order = Order(
        number=number or _new_number(db),
        event_id=event.id,
        user_id=user_id,
        product_id=product.id,
        status=OrderStatus.UNPAID,
        amount=product.price,
        currency=currency,
    )
    try:
        # A racing order for the same user (another product, so not held by this lock) is
        # stopped by the database's one-live-registration index: said as such, not as a 500,
        # and the order goes with the refused registration (one savepoint), so a caller that
        # goes on and commits keeps no order holding a place for nobody.
        with db.begin_nested():
            db.add(order)
            db.flush()
            registration = Registration(
                event_id=event.id,
                user_id=user_id,
                order_id=order.id,
                badge_name=badge_name,
                ticket_code=new_ticket_code(),
            )
            db.add(registration)
            db.flush()
    except IntegrityError as error:
        raise Invalid({"user": "Already registered for this event."}) from error
    record_event(
        db,
        actor,
        "order.created",
        target_type="order",
        target_id=order.number,
        details={"user_id": user_id, "product": product.name, "amount": order.amount},
    )
    return Placed(order, registration)


def mark_paid(
    db: Session, actor: Actor, order: Order, *, method: PaymentMethod, reference: str | None
) -> None:
    if order.status != OrderStatus.UNPAID:
        raise Invalid({"status": f"Only an unpaid order can be paid; this one is {order.status}."})
    order.status = OrderStatus.PAID
    order.payment_method = method
    order.payment_reference = reference
    order.paid_at = order.updated_at = utcnow()
    record_event(
        db,
        actor,
        "order.paid",
        target_type="order",
        target_id=order.number,
        details={"before": {"status": "unpaid"}, "after": {"status": "paid", "method": method}},
    )


def end_order(db: Session, actor: Actor, order: Order, status: OrderStatus) -> None:
    """Cancel (an unpaid order) or refund (a paid one): the registration ends, its place is
    free, and the user may register again."""
    allowed = {OrderStatus.CANCELLED: OrderStatus.UNPAID, OrderStatus.REFUNDED: OrderStatus.PAID}
    if status not in allowed:
        raise ValueError(status)
    if order.status != allowed[status]:
        raise Invalid(
            {"status": f"Only {_AN[status]} order can be {status}; this one is {order.status}."}
        )
    before = order.status
    now = utcnow()
    order.status = status
    order.updated_at = now
    registration = db.scalars(select(Registration).where(Registration.order_id == order.id)).one()
    registration.ended_at = registration.updated_at = now
    record_event(
        db,
        actor,
        f"order.{status}",
        target_type="order",
        target_id=order.number,
        details={"before": {"status": before}, "after": {"status": str(status)}},
    )


def new_ticket_code() -> str:
    """What the ticket's QR code holds and a scanner types (numbers.py: the rules)."""
    return new_ticket_codes(1)[0]


def _live_orders(db: Session, product_id: int) -> int:
    return int(
        db.scalar(
            select(func.count())
            .select_from(Order)
            .where(Order.product_id == product_id, Order.status.in_(LIVE_STATUSES))
        )
        or 0
    )


def _has_live_registration(db: Session, event_id: int, user_id: int) -> bool:
    return bool(
        db.scalar(
            select(
                exists().where(
                    Registration.event_id == event_id,
                    Registration.user_id == user_id,
                    Registration.ended_at.is_(None),
                )
            )
        )
    )


def _new_number(db: Session) -> str:
    """A random order number not taken yet (numbers.py: the rules)."""
    # The highest id: never fewer than the orders there are, read from the key's index (a
    # count would read every order).
    taken = int(db.scalar(select(func.max(Order.id))) or 0)
    digits = order_number_digits(taken)
    for _ in range(_TRIES):
        number = str(secrets.randbelow(9 * 10 ** (digits - 1)) + 10 ** (digits - 1))
        if not db.scalar(select(exists().where(Order.number == number))):
            return number
    raise RuntimeError("no free order number found")  # a tenth used: 20 misses are 1e-20
