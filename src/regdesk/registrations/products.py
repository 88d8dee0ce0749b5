"""The current event's products as organizers manage them (registrations.md, Words: Product):
listed with the places they hold, made and changed from what an organizer typed.

A price is typed as an amount in the instance's currency ("120.00") and kept in minor units;
a blank capacity is no limit, and a capacity is never set below the live orders holding
places already (counted under the product's lock, as ordering.place_order counts them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import table_of
from regdesk.errors import Invalid
from regdesk.events.models import Event
from regdesk.events.service import current_event_for_writing
from regdesk.fields import text
from regdesk.registrations.models import LIVE_STATUSES, Order, OrderStatus, Product
from regdesk.registrations.money import format_amount, minor_units, parse_amount

_PRODUCTS = table_of(Product)
_name = text(_PRODUCTS.c.name, nonempty=True)
_display_name = text(_PRODUCTS.c.display_name)
DESCRIPTION_MAX = 2000
CAPACITY_MAX = 1_000_000
PRICE_MAX = 2_000_000_000  # minor units: within the column's 32 bits on PostgreSQL
POSITION_MAX = 10_000
POSITION_STEP = 10
# The API's names for the columns, in audit events.
NAMES = {
    "name": "name",
    "display_name": "displayName",
    "description": "description",
    "price": "price",
    "capacity": "capacity",
    "opens_at": "opensAt",
    "closes_at": "closesAt",
    "public": "public",
    "position": "position",
}


@dataclass(frozen=True)
class ProductSpec:
    """A product as the organizer typed it: the price as an amount ("120.00"), the capacity
    and position as digits (blank: none, or last), the sale window as `YYYY-MM-DDTHH:MM` in
    UTC (blank: open)."""

    name: str
    display_name: str = ""
    description: str = ""
    price: str = ""
    capacity: str = ""
    opens_at: str = ""
    closes_at: str = ""
    public: bool = True
    position: str = ""

    @classmethod
    def of(cls, product: Product, currency: str) -> ProductSpec:
        """The form's values for a stored product."""
        places = minor_units(currency)
        amount = Decimal(product.price).scaleb(-places)
        return cls(
            name=product.name,
            display_name=product.display_name or "",
            description=product.description,
            price=f"{amount:.{places}f}",  # as typed: 120.00, not $120.00
            capacity="" if product.capacity is None else str(product.capacity),
            opens_at=_typed_moment(product.opens_at),
            closes_at=_typed_moment(product.closes_at),
            public=product.public,
            position=str(product.position),
        )


@dataclass(frozen=True)
class ProductRow:
    """A product and the places its orders take: `sold` paid, `held` unpaid, `left` (None:
    no limit)."""

    product: Product
    sold: int
    held: int
    left: int | None


def product_rows(db: Session, event_id: int) -> list[ProductRow]:
    """The event's products in display order, with their orders counted in one query."""
    counts = (
        select(
            Order.product_id,
            func.sum(case((Order.status == OrderStatus.PAID, 1), else_=0)).label("sold"),
            func.sum(case((Order.status == OrderStatus.UNPAID, 1), else_=0)).label("held"),
        )
        .group_by(Order.product_id)
        .subquery()
    )
    rows = db.execute(
        select(Product, counts.c.sold, counts.c.held)
        .outerjoin(counts, counts.c.product_id == Product.id)
        .where(Product.event_id == event_id)
        .order_by(Product.position, Product.id)
    )
    found = []
    for product, sold, held in rows:
        taken = int(sold or 0) + int(held or 0)
        left = None if product.capacity is None else max(0, product.capacity - taken)
        found.append(ProductRow(product, int(sold or 0), int(held or 0), left))
    return found


def find_current_product(db: Session, product_id: int) -> Product | None:
    """The current event's product with this id."""
    return db.scalars(
        select(Product)
        .join(Event, Event.id == Product.event_id)
        .where(Product.id == product_id, Event.is_current.is_(True))
    ).first()


def create_product(db: Session, actor: Actor, spec: ProductSpec, currency: str) -> Product:
    """A new product of the current event (made if need be), by default listed last."""
    event = current_event_for_writing(db)
    values = _check(db, event.id, spec, currency, None)
    if values["position"] is None:
        last = db.scalar(select(func.max(Product.position)).where(Product.event_id == event.id))
        values["position"] = min(
            (last or 0) // POSITION_STEP * POSITION_STEP + POSITION_STEP, POSITION_MAX
        )
    product = Product(event_id=event.id, **values)
    db.add(product)
    db.flush()
    record_event(
        db,
        actor,
        "product.created",
        target_type="product",
        target_id=product.id,
        details={"name": product.name, "price": product.price, "capacity": product.capacity},
    )
    return product


def update_product(
    db: Session, actor: Actor, product: Product, spec: ProductSpec, currency: str
) -> list[str]:
    """Saves the organizer's changes; what changed (the API's names), [] for nothing."""
    # Locked first, as ordering.place_order locks it: no order slips in between the count of
    # the places held and the new capacity.
    db.scalars(select(Product.id).where(Product.id == product.id).with_for_update()).one()
    values = _check(db, product.event_id, spec, currency, product)
    if values["position"] is None:
        values["position"] = product.position
    return record_changes(
        db,
        actor,
        product,
        {column: values[column] for column in NAMES},  # named in the event in this order
        action="product.updated",
        target_type="product",
        names=NAMES,
        key="changed",
    )


def _check(
    db: Session, event_id: int, spec: ProductSpec, currency: str, product: Product | None
) -> dict[str, Any]:
    """The product's columns from the typed spec, or Invalid naming each bad field by the
    API's name (name, displayName, description, price, capacity, opensAt, closesAt,
    position)."""
    errors: dict[str, str] = {}
    values: dict[str, Any] = {"public": spec.public}
    try:
        values["name"] = _name(" ".join(spec.name.split()))
    except ValueError as exc:
        errors["name"] = f"The name {exc}."
    try:
        values["display_name"] = _display_name(" ".join(spec.display_name.split())) or None
    except ValueError as exc:
        errors["displayName"] = f"The display name {exc}."
    values["description"] = spec.description.strip().replace("\r\n", "\n")
    if len(values["description"]) > DESCRIPTION_MAX:
        errors["description"] = f"The description is longer than {DESCRIPTION_MAX} characters."
    try:
        values["price"] = parse_amount(spec.price, currency)
    except ValueError as exc:
        errors["price"] = f"The price {exc}."
    else:
        if values["price"] > PRICE_MAX:
            most = format_amount(PRICE_MAX, currency)
            errors["price"] = f"The price may be at most {most}."
    values["capacity"] = _whole(spec.capacity, "capacity", CAPACITY_MAX, errors)
    values["position"] = _whole(spec.position, "position", POSITION_MAX, errors)
    for key, column in (("opensAt", "opens_at"), ("closesAt", "closes_at")):
        values[column] = _moment(getattr(spec, column), key, errors)
    opens, closes = values["opens_at"], values["closes_at"]
    if opens is not None and closes is not None and closes <= opens:
        errors["closesAt"] = "The sale must close after it opens."
    if "name" in values:
        taken = db.scalar(
            select(Product.id).where(
                Product.event_id == event_id,
                Product.name == values["name"],
                Product.id != (product.id if product else 0),
            )
        )
        if taken is not None:
            errors["name"] = f"The event already has a product named {values['name']!r}."
    capacity = values["capacity"]
    if product is not None and capacity is not None and "capacity" not in errors:
        live = _live_orders(db, product.id)
        if capacity < live:
            errors["capacity"] = (
                f"{live} live order{'s hold' if live != 1 else ' holds'} a place already: "
                f"the capacity cannot be below {live}."
            )
    if errors:
        raise Invalid(errors)
    return values


def _whole(typed: str, key: str, most: int, errors: dict[str, str]) -> int | None:
    digits = typed.strip().replace(",", "")
    if not digits:
        return None
    if not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(most))) or (
        int(digits) > most
    ):
        errors[key] = f"The {key} must be a whole number from 0 to {most:,}, or blank."
        return None
    return int(digits)


def _moment(typed: str, key: str, errors: dict[str, str]) -> dt.datetime | None:
    """A datetime-local input's value (`2026-07-04T18:30`, seconds optional) read as UTC."""
    typed = typed.strip()
    if not typed:
        return None
    try:
        moment = dt.datetime.fromisoformat(typed)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is not None or not 2000 <= moment.year <= 2999:
        errors[key] = f"{typed[:40]!r} is not a date and time: write it as 2026-07-04T18:30."
        return None
    return moment.replace(tzinfo=dt.UTC)


def _typed_moment(moment: dt.datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M")


def _live_orders(db: Session, product_id: int) -> int:
    return int(
        db.scalar(
            select(func.count())
            .select_from(Order)
            .where(Order.product_id == product_id, Order.status.in_(LIVE_STATUSES))
        )
        or 0
    )
