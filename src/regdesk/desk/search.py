"""The desk's one search box (registrations.md, Pages): a scanned ticket code, an order id, an
e-mail, a name or a badge name, answered from indexes whatever the number of registrations.

A scanned ticket is checked for its signature before anything is read: a forged one is said
to be so at once. A ticket, its code as the attendee's page shows it, or an order id names one
registration (the desk goes straight to its
card); anything else lists the current event's registrations whose person's e-mail is the one
typed, or whose person's username, first, last or preferred name, "first last", or badge name
starts with it (cancelled and refunded ones too: the desk shows them as such).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, Select, and_, func, select, union
from sqlalchemy.orm import Session

from regdesk.events.service import current_event
from regdesk.registrations.models import Order, Product, Registration
from regdesk.registrations.ticket_codes import CODE_MAX, TicketKeys, keys_read_in, split
from regdesk.users.models import User
from regdesk.users.service import starts_with

LISTED = 20
TYPED_MAX = 200


@dataclass(frozen=True)
class Line:
    """One registration in the list of matches."""

    registration: Registration
    order: Order
    product: Product
    user: User


@dataclass(frozen=True)
class Found:
    """What the box found: one registration (`card`), or a list of matches (`more`: there
    were more than listed), or a ticket code this instance did not sign (`forged`)."""

    card: int | None = None
    lines: list[Line] = field(default_factory=list)
    more: bool = False
    forged: bool = False


def find(db: Session, typed: str, keys: TicketKeys) -> Found:
    text = " ".join(typed.replace("\x00", "").split())[:TYPED_MAX]
    event = current_event(db)
    if not text or event is None:
        return Found()
    if split(text) is not None:
        code = keys.verify(text, keys_read_in(db))
        if code is None:
            return Found(forged=True)
        return Found(card=_one(db, Registration.ticket_code == code, event.id))
    if " " not in text and len(text) <= CODE_MAX:
        # The code as the attendee's page shows it, read out or typed: one seek of its index.
        card = _one(db, Registration.ticket_code == text.upper(), event.id)
        if card is not None:
            return Found(card=card)
    if text.isascii() and text.isdigit():
        number = select(Order.id).where(Order.number == text, Order.event_id == event.id)
        return Found(card=_one(db, Registration.order_id == number.scalar_subquery(), event.id))
    ids = list(db.scalars(_matches(text, event.id).limit(LISTED + 1)))
    return Found(lines=lines(db, ids[:LISTED]), more=len(ids) > LISTED)


def lines(db: Session, ids: list[int]) -> list[Line]:
    """The registrations with these ids, with their orders, products and people, in id order."""
    if not ids:
        return []
    rows = db.execute(
        select(Registration, Order, Product, User)
        .join(Order, Order.id == Registration.order_id)
        .join(Product, Product.id == Order.product_id)
        .join(User, User.id == Registration.user_id)
        .where(Registration.id.in_(ids))
        .order_by(Registration.id)
    )
    return [Line(*row) for row in rows]


def _one(db: Session, condition: ColumnElement[bool], event_id: int) -> int | None:
    return db.scalar(select(Registration.id).where(condition, Registration.event_id == event_id))


def _matches(text: str, event_id: int) -> Select[int]:
    """The ids of the event's registrations that match `text`, in id order. The people first,
    each condition a seek on one of the users' indexes (lower(e-mail), lower(name)), then their
    registrations by ix_registrations_user_id_event_id; badge names by
    ix_registrations_event_id_badge_name_lower. Never the event's registrations one by one."""
    of_event = Registration.event_id == event_id
    if "@" in text:  # e-mails are unique: one person at most
        person = select(User.id).where(func.lower(User.email) == func.lower(text))
        return (
            select(Registration.id)
            .where(Registration.user_id == person.scalar_subquery(), of_event)
            .order_by(Registration.id)
        )
    people = [
        starts_with(column, text)
        for column in (User.username, User.first_name, User.last_name, User.preferred_name)
    ]
    words = text.split()
    if len(words) == 2:
        people.append(
            and_(starts_with(User.first_name, words[0]), starts_with(User.last_name, words[1]))
        )
    who = union(*(select(User.id).where(condition) for condition in people)).scalar_subquery()
    matched = union(
        select(Registration.id).where(Registration.user_id.in_(who), of_event),
        select(Registration.id).where(starts_with(Registration.badge_name, text), of_event),
    ).subquery()
    return select(matched.c.id).order_by(matched.c.id)
