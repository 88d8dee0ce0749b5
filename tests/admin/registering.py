"""What the admin tests of products, orders and registrations share: products, registrations
and orders made through the services every way of registering uses, an event with some of
each (`make_event`), and the registration record as a service integration reads it
(registrations.md, API)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.db import utcnow, write_session
from regdesk.events.options import OptionSpec
from regdesk.registrations.flags import create_flag
from regdesk.registrations.models import (
    Order,
    OrderStatus,
    PaymentMethod,
    Registration,
    RegistrationFlagLink,
)
from regdesk.registrations.options import REGISTRATION_OPTIONS
from regdesk.registrations.ordering import end_order, mark_paid
from regdesk.registrations.products import ProductSpec, create_product
from regdesk.registrations.service import register
from regdesk.users.models import User
from tests.conftest import Apps, bearer
from tests.web.support import make_user

ACTOR = Actor("test")


def make_product(
    engine: Engine,
    name: str = "attendee",
    *,
    price: str = "65.00",
    capacity: str = "",
    display_name: str = "",
    public: bool = True,
) -> int:
    spec = ProductSpec(
        name, display_name=display_name, price=price, capacity=capacity, public=public
    )
    with write_session(engine) as session:
        return create_product(session, ACTOR, spec, "USD").id


@dataclass(frozen=True)
class Held:
    number: str  # the order's
    order_id: int
    registration_id: int


def registered(
    engine: Engine,
    user_id: int,
    product_id: int,
    *,
    badge: str | None = None,
    answers: dict[str, Any] | None = None,
) -> Held:
    """An unpaid order of the product, and the user's registration, as the desk makes them."""
    with write_session(engine) as session:
        placed = register(
            session,
            ACTOR,
            user_id=user_id,
            product_id=product_id,
            currency="USD",
            badge=badge,
            answers=answers or {},
            by_staff=True,
        )
        return Held(placed.order.number, placed.order.id, placed.registration.id)


def paid(engine: Engine, held: Held) -> None:
    with write_session(engine) as session:
        order = session.get_one(Order, held.order_id)
        mark_paid(session, ACTOR, order, method=PaymentMethod.EXTERNAL, reference=None)


def ended(engine: Engine, held: Held, status: OrderStatus) -> None:
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, held.order_id), status)


def checked_in(engine: Engine, held: Held) -> None:
    """As the desk records a badge picked up (its time; no staff member here)."""
    with write_session(engine) as session:
        session.get_one(Registration, held.registration_id).checked_in_at = utcnow()


def order_row(engine: Engine, held: Held) -> Order:
    with Session(engine) as session:
        return session.get_one(Order, held.order_id)


def registration_row(engine: Engine, held: Held) -> Registration:
    with Session(engine) as session:
        return session.get_one(Registration, held.registration_id)


def count(engine: Engine, model: type[Any]) -> int:
    with Session(engine) as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def api_registration(apps: Apps, user_id: int) -> Any:
    """GET /api/v0/users/{id}/registration with a service token, as a client reads it: the
    record, or the status code when there is none."""
    response = apps.client.get(
        f"/api/v0/users/{user_id}/registration",
        headers=bearer(apps.service_token("registration:read")),
    )
    return response.json() if response.status_code == 200 else response.status_code


# --- an event with registrations ------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """The registration options and flags by name -> id, two products, and three people:
    fox (attendee, paid, checked in, flagged fursuits and staff), owl (sponsor, unpaid, a
    badge name a spreadsheet would run) and elk (attendee, cancelled)."""

    options: dict[str, int]
    flags: dict[str, int]
    attendee: int
    sponsor: int
    held: dict[str, Held]
    users: dict[str, int]


def make_event(engine: Engine) -> Event:
    options = {}
    with write_session(engine) as session:
        for spec in (
            OptionSpec("T-shirt size", "select", "S\nM\nL"),
            OptionSpec("Diet", "multi", "Vegan\nHalal"),
            OptionSpec("Notes", "text"),
            OptionSpec("Nights", "number"),
        ):
            options[spec.name] = REGISTRATION_OPTIONS.create(session, ACTOR, spec).id
        flags = {name: create_flag(session, ACTOR, name).id for name in ("fursuits", "staff")}
    attendee = make_product(engine, "attendee", price="65")
    sponsor = make_product(engine, "sponsor", price="120", display_name="Sponsor")
    users = {name: make_user(engine, name) for name in ("fox", "owl", "elk")}
    held = {
        "fox": registered(
            engine, users["fox"], attendee, badge="Fae the Fox", answers={"T-shirt size": "M"}
        ),
        "owl": registered(engine, users["owl"], sponsor, badge='=HYPERLINK("http://x.test")'),
        "elk": registered(engine, users["elk"], attendee, badge='Elk, "the Great"'),
    }
    paid(engine, held["fox"])
    checked_in(engine, held["fox"])
    ended(engine, held["elk"], OrderStatus.CANCELLED)
    with write_session(engine) as session:
        for name in ("fursuits", "staff"):
            session.add(
                RegistrationFlagLink(
                    registration_id=held["fox"].registration_id, flag_id=flags[name]
                )
            )
        session.get_one(User, users["owl"]).preferred_name = "-Owl-"
    return Event(options, flags, attendee, sponsor, held, users)
