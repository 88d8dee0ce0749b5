"""Ordering (registrations/ordering.py): the rules registrations.md says must hold, on both
databases, with real concurrent transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import read_session, utcnow, write_session
from regdesk.errors import Invalid
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import Order, OrderStatus, PaymentMethod, Product, Registration
from regdesk.registrations.ordering import (
    Placed,
    end_order,
    mark_paid,
    place_order,
    places_left,
)
from tests.web.support import make_user

ACTOR = Actor("test")


def product(engine: Engine, name: str = "attendee", **fields: object) -> int:
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        made = Product(event_id=event.id, name=name, price=fields.pop("price", 6500), **fields)
        session.add(made)
        session.flush()
        return made.id


def order(engine: Engine, user_id: int, product_id: int, **options: object) -> Placed:
    with write_session(engine) as session:
        return place_order(
            session, ACTOR, user_id=user_id, product_id=product_id, currency="EUR", **options
        )


def refused(call: Callable[[], object]) -> dict[str, str]:
    with pytest.raises(Invalid) as raised:
        call()
    return raised.value.errors


def race(count: int, attempt: Callable[[int], None]) -> tuple[int, list[BaseException]]:
    """`attempt(i)` in `count` threads released at once: how many returned, and what the
    others raised."""
    barrier = threading.Barrier(count)
    done: list[int] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            attempt(i)
            done.append(i)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return len(done), errors


def test_an_order_costs_the_products_price_in_minor_units_and_makes_a_registration(
    engine: Engine,
) -> None:
    fox = make_user(engine, "fox")
    sponsor = product(engine, "sponsor", price=12000, capacity=300)
    placed = order(engine, fox, sponsor, badge_name="Fae the Fox")
    with read_session(engine) as session:
        stored = session.get(Order, placed.order.id)
        assert stored is not None
        assert (stored.amount, stored.currency, stored.status) == (12000, "EUR", "unpaid")
        assert isinstance(stored.amount, int)
        assert stored.number.isdigit()
        assert not stored.number.startswith("0")
        assert len(stored.number) == 5
        registration = session.scalars(select(Registration)).one()
        assert (registration.user_id, registration.order_id) == (fox, stored.id)
        assert registration.badge_name == "Fae the Fox"
        assert registration.ended_at is None
        assert len(registration.ticket_code) == 20
        made = session.get(Product, sponsor)
        assert made is not None
        assert places_left(session, made) == 299
        actions = session.scalars(select(AuditEvent.action)).all()
        assert "order.created" in actions


def test_of_many_racing_for_the_last_places_exactly_that_many_get_an_order(
    engine: Engine,
) -> None:
    racers, places = 12, 3
    users = [make_user(engine, f"racer{i}") for i in range(racers)]
    last = product(engine, "last", capacity=places)

    placed, errors = race(racers, lambda i: order(engine, users[i], last))

    assert placed == places
    assert [e.errors for e in errors if isinstance(e, Invalid)] == [{"product": "Sold out."}] * (
        racers - places
    ), errors
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Order)) == places
        assert session.scalar(select(func.count()).select_from(Registration)) == places


def test_one_live_registration_per_user_and_event_even_when_racing(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    products = [product(engine, f"product{i}") for i in range(6)]

    def order_and_carry_on(i: int) -> None:
        """As a page does that answers a refusal in the same transaction and commits it."""
        refusal = None
        with write_session(engine) as session:
            try:
                place_order(session, ACTOR, user_id=fox, product_id=products[i], currency="EUR")
            except Invalid as invalid:
                refusal = invalid  # the transaction goes on, and is committed
        if refusal is not None:
            raise refusal

    placed, errors = race(len(products), order_and_carry_on)

    assert placed == 1
    assert [e.errors for e in errors if isinstance(e, Invalid)] == [
        {"user": "Already registered for this event."}
    ] * (len(products) - 1), errors
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Registration)) == 1
        # No order left behind by a refusal, holding a place for no one.
        assert session.scalar(select(func.count()).select_from(Order)) == 1


def test_a_cancelled_or_refunded_order_frees_its_place_and_lets_the_user_register_again(
    engine: Engine,
) -> None:
    fox, owl = make_user(engine, "fox"), make_user(engine, "owl")
    one = product(engine, "one", capacity=1)
    first = order(engine, fox, one)
    assert refused(lambda: order(engine, owl, one)) == {"product": "Sold out."}
    assert refused(lambda: order(engine, fox, one)) == {
        "user": "Already registered for this event."
    }

    with write_session(engine) as session:
        end_order(session, ACTOR, session.get(Order, first.order.id), OrderStatus.CANCELLED)
    second = order(engine, owl, one)  # the place is free again
    with write_session(engine) as session:
        paid = session.get(Order, second.order.id)
        mark_paid(session, ACTOR, paid, method=PaymentMethod.DESK, reference="till 2")
        end_order(session, ACTOR, paid, OrderStatus.REFUNDED)
    order(engine, fox, one)  # and again, for fox, who registers anew

    with read_session(engine) as session:
        statuses = session.scalars(select(Order.status).order_by(Order.id)).all()
        assert statuses == ["cancelled", "refunded", "unpaid"]
        live = session.scalars(select(Registration).where(Registration.ended_at.is_(None))).all()
        assert [r.user_id for r in live] == [fox]
        actions = session.scalars(select(AuditEvent.action).order_by(AuditEvent.id)).all()
        assert [a for a in actions if a.startswith("order.")] == [
            "order.created",
            "order.cancelled",
            "order.created",
            "order.paid",
            "order.refunded",
            "order.created",
        ]


def test_only_an_unpaid_order_is_cancelled_and_only_a_paid_one_refunded(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    placed = order(engine, fox, product(engine))
    with write_session(engine) as session:
        unpaid = session.get(Order, placed.order.id)
        assert refused(lambda: end_order(session, ACTOR, unpaid, OrderStatus.REFUNDED)) == {
            "status": "Only a paid order can be refunded; this one is unpaid."
        }


def test_a_product_off_sale_or_for_staff_only_is_refused_to_attendees(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    now = utcnow()
    later = product(engine, "later", opens_at=now.replace(year=now.year + 1))
    over = product(engine, "over", closes_at=now.replace(year=now.year - 1))
    comp = product(engine, "comp", public=False, price=0)
    for name in (later, over):
        assert refused(lambda name=name: order(engine, fox, name)) == {
            "product": "This product is not on sale now."
        }
    assert refused(lambda: order(engine, fox, comp)) == {
        "product": "This product is sold at the desk only."
    }
    assert order(engine, fox, comp, by_staff=True).order.amount == 0
