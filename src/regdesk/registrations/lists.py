"""What organizers look through in the admin area: the current event's orders, found by
order number, name or e-mail; its registrations, filtered by product, order status, flag and
check-in; one order or registration with everything about it; and the filtered registrations
as a CSV for badge printing."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, exists, func, or_, select
from sqlalchemy.orm import Session

from regdesk.events.service import current_event
from regdesk.registrations.models import (
    Order,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
)
from regdesk.users.models import User

SEARCH_WORDS = 5
WORD_MAX = 100
CSV_BATCH = 1000
# Matched by part, whatever the case: each word typed must be in one of them.
_PERSON_COLUMNS = (
    User.first_name,
    User.last_name,
    User.preferred_name,
    User.username,
    User.email,
)
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_COLUMNS = [
    "orderId",
    "badgeName",
    "firstName",
    "lastName",
    "preferredName",
    "product",
    "status",
    "flags",
    "checkedIn",
]


# --- orders ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrderLine:
    order: Order
    user: User
    product: Product


@dataclass(frozen=True)
class OrderPage:
    lines: list[OrderLine]
    total: int


def search_orders(
    db: Session, typed: str, status: str | None, *, offset: int, limit: int
) -> OrderPage:
    """The current event's orders, newest first: those whose number is `typed` (digits), or
    whose person's name, username or e-mail holds each word typed; of `status` if given."""
    event = current_event(db)
    if event is None:
        return OrderPage([], 0)
    query = (
        select(Order, User, Product)
        .join(User, User.id == Order.user_id)
        .join(Product, Product.id == Order.product_id)
        .where(Order.event_id == event.id)
    )
    text = typed.strip()
    if text.isascii() and text.isdigit():
        query = query.where(Order.number == text)
    else:
        query = query.where(*_person_matches(text))
    if status is not None:
        query = query.where(Order.status == status)
    total = db.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = db.execute(
        query.order_by(Order.created_at.desc(), Order.id.desc()).offset(offset).limit(limit)
    )
    return OrderPage([OrderLine(*row) for row in rows], total)


@dataclass(frozen=True)
class OrderDetail:
    order: Order
    user: User
    product: Product
    registration: Registration


def order_detail(db: Session, number: str) -> OrderDetail | None:
    """The current event's order with this number, its person, product and registration."""
    event = current_event(db)
    if event is None:
        return None
    row = db.execute(
        select(Order, User, Product, Registration)
        .join(User, User.id == Order.user_id)
        .join(Product, Product.id == Order.product_id)
        .join(Registration, Registration.order_id == Order.id)
        .where(Order.number == number, Order.event_id == event.id)
    ).first()
    return OrderDetail(*row) if row is not None else None


# --- registrations --------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """Which registrations to list: each filter given narrows the list."""

    product_id: int | None = None
    status: str | None = None  # the order's
    flag_id: int | None = None
    checked_in: bool | None = None
    typed: str = ""  # an order number, or words of a name, username, e-mail or badge name


@dataclass(frozen=True)
class RegistrationLine:
    registration: Registration
    order: Order
    product: Product
    user: User
    flags: list[str] = field(default_factory=list)  # short names, alphabetical


@dataclass(frozen=True)
class RegistrationPage:
    lines: list[RegistrationLine]
    total: int


def search_registrations(
    db: Session, filters: Filters, *, offset: int, limit: int
) -> RegistrationPage:
    """The current event's registrations matching `filters` (cancelled and refunded ones
    too, unless a status is asked), by name."""
    query = _registrations(db, filters)
    if query is None:
        return RegistrationPage([], 0)
    total = db.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = list(db.execute(query.offset(offset).limit(limit)))
    return RegistrationPage(_lines(db, rows), total)


def every_registration(db: Session, filters: Filters) -> Iterator[RegistrationLine]:
    """Every registration matching `filters`, by name, read a batch at a time."""
    query = _registrations(db, filters)
    if query is None:
        return
    offset = 0
    while True:
        rows = list(db.execute(query.offset(offset).limit(CSV_BATCH)))
        yield from _lines(db, rows)
        if len(rows) < CSV_BATCH:
            return
        offset += CSV_BATCH


def badge_csv(lines: Iterator[RegistrationLine]) -> str:
    """The registrations as CSV for badge printing (CSV_COLUMNS), every cell a spreadsheet
    could take for a formula made plain text."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for line in lines:
        user = line.user
        writer.writerow(
            _plain(cell)
            for cell in (
                line.order.number,
                line.registration.badge_name or "",
                user.first_name,
                user.last_name,
                user.preferred_name or "",
                line.product.name,
                line.order.status,
                "; ".join(line.flags),
                "yes" if line.registration.checked_in_at is not None else "no",
            )
        )
    return out.getvalue()


@dataclass(frozen=True)
class RegistrationDetail:
    registration: Registration
    order: Order
    product: Product
    user: User
    flag_ids: set[int]
    checked_in_by: User | None


def registration_detail(db: Session, registration_id: int) -> RegistrationDetail | None:
    """The current event's registration with this id, and all that goes with it."""
    event = current_event(db)
    if event is None:
        return None
    row = db.execute(
        select(Registration, Order, Product, User)
        .join(Order, Order.id == Registration.order_id)
        .join(Product, Product.id == Order.product_id)
        .join(User, User.id == Registration.user_id)
        .where(Registration.id == registration_id, Registration.event_id == event.id)
    ).first()
    if row is None:
        return None
    registration = row[0]
    flag_ids = set(
        db.scalars(
            select(RegistrationFlagLink.flag_id).where(
                RegistrationFlagLink.registration_id == registration.id
            )
        )
    )
    by = db.get(User, registration.checked_in_by) if registration.checked_in_by else None
    return RegistrationDetail(*row, flag_ids=flag_ids, checked_in_by=by)


def _registrations(
    db: Session, filters: Filters
) -> Select[Registration, Order, Product, User] | None:
    event = current_event(db)
    if event is None:
        return None
    query = (
        select(Registration, Order, Product, User)
        .join(Order, Order.id == Registration.order_id)
        .join(Product, Product.id == Order.product_id)
        .join(User, User.id == Registration.user_id)
        .where(Registration.event_id == event.id)
    )
    if filters.product_id is not None:
        query = query.where(Order.product_id == filters.product_id)
    if filters.status is not None:
        query = query.where(Order.status == filters.status)
    if filters.flag_id is not None:
        query = query.where(
            exists().where(
                RegistrationFlagLink.registration_id == Registration.id,
                RegistrationFlagLink.flag_id == filters.flag_id,
            )
        )
    if filters.checked_in is not None:
        checked = Registration.checked_in_at.is_not(None)
        query = query.where(checked if filters.checked_in else ~checked)
    text = filters.typed.strip()
    if text.isascii() and text.isdigit():
        query = query.where(Order.number == text)
    else:
        query = query.where(*_person_matches(text, Registration.badge_name))
    return query.order_by(
        func.lower(func.coalesce(User.preferred_name, User.first_name)),
        func.lower(User.last_name),
        Registration.id,
    )


def _lines(db: Session, rows: list[Any]) -> list[RegistrationLine]:
    ids = [row[0].id for row in rows]
    flags: dict[int, list[str]] = defaultdict(list)
    if ids:
        for registration_id, name in db.execute(
            select(RegistrationFlagLink.registration_id, RegistrationFlag.short_name)
            .join(RegistrationFlag, RegistrationFlag.id == RegistrationFlagLink.flag_id)
            .where(RegistrationFlagLink.registration_id.in_(ids))
            .order_by(RegistrationFlag.short_name)
        ):
            flags[registration_id].append(name)
    return [
        RegistrationLine(registration, order, product, user, flags[registration.id])
        for registration, order, product, user in rows
    ]


def _person_matches(typed: str, *more: Any) -> list[ColumnElement[bool]]:
    """Each word typed (at most SEARCH_WORDS) in one of the person's columns (or `more`),
    taken literally: % and _ are no wildcards."""
    conditions = []
    for word in typed.split()[:SEARCH_WORDS]:
        escaped = word.lower()[:WORD_MAX].replace("\\", "\\\\")
        pattern = "%" + escaped.replace("%", "\\%").replace("_", "\\_") + "%"
        conditions.append(
            or_(
                *(
                    func.lower(column).like(pattern, escape="\\")
                    for column in (*_PERSON_COLUMNS, *more)
                )
            )
        )
    return conditions


def _plain(cell: str) -> str:
    """A cell as text, never a formula: one a spreadsheet would run gets a leading '."""
    return f"'{cell}" if cell.startswith(_FORMULA_STARTS) else cell
