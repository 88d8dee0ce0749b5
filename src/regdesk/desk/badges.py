"""Badges (registrations.md, Pages; issue 17): what a printed badge shows, the batch printed the
night before opening, and marking badges printed.

A badge shows the badge name (or, without one, the person's name: registrations.service's
`badge_name`), the product, and the ticket the attendee's QR code holds (the code signed,
registrations/ticket_codes.py), so that a badge scans at the desk like the e-mailed ticket.
Only a live, paid registration is printed.

A batch is one query bounded by its limit (at most BATCH_MAX), in registration id order after
a keyset (`after`), on ix_registrations_event_id_id: the night before opening prints the
event's thousands a batch at a time, never reading them all at once.

Marking printed is one conditional UPDATE of the given registrations that are live and paid
(RETURNING the ids it changed), and one audit event per registration
(`registration.badge_printed`, naming the staff member and the batch's size), all written in
one statement and in the caller's transaction. A reprint sets the time again and is recorded
again. `updated_at` stays: the registration's record (the API's) shows nothing of printing,
so its rendered document is not redone for every badge.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, exists, select, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, Change, record_all
from regdesk.db import ID_MAX, utcnow
from regdesk.events.service import current_event
from regdesk.keys import signing_key
from regdesk.registrations import ticket_codes
from regdesk.registrations.models import (
    Order,
    OrderStatus,
    Product,
    Registration,
    RegistrationFlagLink,
)
from regdesk.users.models import User

BATCH_DEFAULT = 100
BATCH_MAX = 500
PRINTED = "registration.badge_printed"


@dataclass(frozen=True)
class Badge:
    """One badge, as printed."""

    registration_id: int
    name: str  # the badge name, or the person's name when there is none
    product: str
    ticket: str  # the ticket code signed: what the QR code holds
    order_number: str
    paid: bool  # live and paid: only such a badge is marked printed
    printed_at: dt.datetime | None


@dataclass(frozen=True)
class Selection:
    """Which badges a batch holds: each filter given narrows it."""

    product_id: int | None = None
    flag_id: int | None = None
    unprinted: bool = True  # only those never printed
    after: int = 0  # registration id: the batch starts after it
    limit: int = BATCH_DEFAULT


@dataclass(frozen=True)
class Batch:
    badges: list[Badge]
    next_after: int | None  # where the next batch starts, when there are more


def badge(db: Session, registration_id: int) -> Badge | None:
    """The badge of the current event's registration with this id (whatever its status: the
    page says when it is not printable)."""
    event = current_event(db)
    if event is None:
        return None
    rows = db.execute(
        _badge_rows().where(Registration.id == registration_id, Registration.event_id == event.id)
    ).all()
    return _badges(db, rows)[0] if rows else None


def batch(db: Session, selection: Selection) -> Batch:
    """The current event's live, paid registrations `selection` picks, in id order."""
    event = current_event(db)
    if event is None:
        return Batch([], None)
    limit = max(1, min(selection.limit, BATCH_MAX))
    query = _badge_rows().where(
        Registration.event_id == event.id,
        Registration.id > selection.after,
        *_printable(joined=True),
    )
    if selection.product_id is not None:
        query = query.where(Order.product_id == selection.product_id)
    if selection.flag_id is not None:
        query = query.where(
            exists().where(
                RegistrationFlagLink.registration_id == Registration.id,
                RegistrationFlagLink.flag_id == selection.flag_id,
            )
        )
    if selection.unprinted:
        query = query.where(Registration.badge_printed_at.is_(None))
    rows = db.execute(query.order_by(Registration.id).limit(limit + 1)).all()
    badges = _badges(db, rows[:limit])
    return Batch(badges, badges[-1].registration_id if len(rows) > limit else None)


def mark_printed(db: Session, actor: Actor, registration_ids: Iterable[int]) -> list[int]:
    """Records the badges of these registrations printed now, by `actor`: those of the
    current event that are live and paid (at most BATCH_MAX); the ids marked, in order."""
    event = current_event(db)
    wanted = sorted({i for i in registration_ids if 0 < i <= ID_MAX})[:BATCH_MAX]
    if event is None or not wanted:
        return []
    now = utcnow()
    marked = sorted(
        db.scalars(
            update(Registration)
            .where(
                Registration.id.in_(wanted),
                Registration.event_id == event.id,
                *_printable(joined=False),
            )
            .values(badge_printed_at=now)
            .returning(Registration.id)
            .execution_options(synchronize_session=False)
        )
    )
    details = {"printedBy": actor.user_id, "batch": len(marked)}
    record_all(db, actor, [Change(PRINTED, "registration", i, details) for i in marked])
    return marked


def _printable(*, joined: bool) -> list[ColumnElement[bool]]:
    """Live and paid; `joined`: in a query that joins the order already."""
    paid = Order.status == OrderStatus.PAID
    if not joined:
        paid = exists().where(Order.id == Registration.order_id, paid)
    return [Registration.ended_at.is_(None), paid]


def _badge_rows() -> Select[*tuple[Any, ...]]:
    return (
        select(
            Registration.id,
            Registration.badge_name,
            Registration.ticket_code,
            Registration.badge_printed_at,
            Registration.ended_at,
            Order.number,
            Order.status,
            Product.name.label("product_name"),
            Product.display_name,
            User.preferred_name,
            User.first_name,
            User.last_name,
        )
        .join(Order, Order.id == Registration.order_id)
        .join(Product, Product.id == Order.product_id)
        .join(User, User.id == Registration.user_id)
    )


def _badges(db: Session, rows: Sequence[Row[Any]]) -> list[Badge]:
    if not rows:
        return []
    # One key for the whole batch: signing is cheap, reading and decrypting the key is not.
    key = signing_key(db, ticket_codes.PURPOSE, ticket_codes.ALGORITHM)
    return [
        Badge(
            registration_id=row.id,
            name=row.badge_name or f"{row.preferred_name or row.first_name} {row.last_name}",
            product=row.display_name or row.product_name,
            ticket=ticket_codes.signed(row.ticket_code, key),
            order_number=row.number,
            paid=row.status == OrderStatus.PAID and row.ended_at is None,
            printed_at=row.badge_printed_at,
        )
        for row in rows
    ]
