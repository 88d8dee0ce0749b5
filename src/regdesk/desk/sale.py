"""Selling at the desk (registrations.md, Pages; issue 17): find or make the person, sell them a
product, take the payment, and, if asked, check them in: one submit, one transaction.

Every step is the service every other way of doing it uses, with its own rules and audit
event naming the staff member: a new person is made as `regdesk users create` makes one
(users.service.create_user: `user.created`, no password: they set one with "Forgot your
password?"); the order by registrations.service.register with `by_staff` (staff sell the
staff-only products, and outside the sale window; a product's capacity still holds:
`order.created`); the payment by ordering.mark_paid, method `desk` (`order.paid`); the check-in
by desk.check_in (`registration.checked_in`). They run in one savepoint: a refusal at any step
(a taken username, a sold-out product) leaves nothing of the others behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.desk.check_in import check_in
from regdesk.errors import Invalid
from regdesk.events.service import current_event
from regdesk.registrations.models import PaymentMethod, Registration
from regdesk.registrations.ordering import mark_paid
from regdesk.registrations.service import register
from regdesk.users.models import User
from regdesk.users.service import NewUser, create_user, find_users

PEOPLE_LISTED = 10


@dataclass(frozen=True)
class Candidate:
    """A person the desk may sell to, and their live registration of the current event, if
    they hold one already (then there is nothing to sell them: the desk opens their card)."""

    user: User
    registration_id: int | None


@dataclass(frozen=True)
class NewPerson:
    username: str
    email: str
    first_name: str
    last_name: str


@dataclass(frozen=True)
class Sale:
    """What the sale form asks: who (`user_id`, or `new_person`), what, and how it went."""

    product_id: int
    user_id: int | None = None
    new_person: NewPerson | None = None
    badge_name: str = ""
    reference: str | None = None
    check_in_now: bool = False


@dataclass(frozen=True)
class Sold:
    registration_id: int
    order_number: str
    user_id: int
    checked_in: bool


def candidates(db: Session, typed: str) -> tuple[list[Candidate], bool]:
    """The people matching what was typed (an e-mail; the start of a username or a name;
    "first last"; a user id), as the admin area's user search finds them, from indexes; and
    whether there were more than PEOPLE_LISTED."""
    if not typed.strip():
        return [], False
    users, more = find_users(db, typed.replace("\x00", "")[:200], 0, PEOPLE_LISTED)
    event = current_event(db)
    held: dict[int, int] = {}
    if users and event is not None:
        rows = db.execute(
            select(Registration.user_id, Registration.id).where(
                Registration.user_id.in_([u.id for u in users]),
                Registration.event_id == event.id,
                Registration.ended_at.is_(None),
            )
        )
        held = {row.user_id: row.id for row in rows}
    return [Candidate(user, held.get(user.id)) for user in users], more is not None


def sell(db: Session, actor: Actor, sale: Sale, *, currency: str) -> Sold:
    """The sale, in the caller's transaction; Invalid (nothing written) naming what was
    refused: the new person's fields (`username`, `email`, `firstName`, `lastName`), `user`
    (unknown, or registered already), `product` (none such, sold out), `badgeName`."""
    with db.begin_nested():
        user_id = _buyer(db, actor, sale)
        placed = register(
            db,
            actor,
            user_id=user_id,
            product_id=sale.product_id,
            currency=currency,
            badge=sale.badge_name,
            by_staff=True,
        )
        mark_paid(db, actor, placed.order, method=PaymentMethod.DESK, reference=sale.reference)
        if sale.check_in_now:
            check_in(db, actor, placed.registration)
    return Sold(placed.registration.id, placed.order.number, user_id, sale.check_in_now)


def _buyer(db: Session, actor: Actor, sale: Sale) -> int:
    if sale.new_person is not None:
        new = sale.new_person
        user = create_user(
            db, actor, NewUser(new.username, new.email, new.first_name, new.last_name)
        )
        return user.id
    if sale.user_id is None or db.get(User, sale.user_id) is None:
        raise Invalid({"user": "Choose the person, or a new one."})
    return sale.user_id
