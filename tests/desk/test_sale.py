"""Selling at the desk (desk/sale.py), on both databases: a new or known person, a product
(staff-only ones too, capacity still held), paid at the desk and checked in, in one
transaction whose every step is an audit event naming the staff member; a refusal at any step
writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.desk.sale import NewPerson, Sale, Sold, candidates, sell
from regdesk.errors import Invalid
from regdesk.registrations.models import Order, Registration
from regdesk.registrations.service import register
from regdesk.users.models import User
from tests.admin.registering import make_product, paid, registered
from tests.desk.support import desk_staff
from tests.web.support import make_user

ZED = NewPerson("zed", "zed@example.org", "Zed", "Zebra")


def staff(engine: Engine) -> Actor:
    user_id = desk_staff(engine)
    return Actor(label=f"user:{user_id}", user_id=user_id)


def sold(engine: Engine, actor: Actor, sale: Sale) -> Sold:
    with write_session(engine) as session:
        return sell(session, actor, sale, currency="USD")


def refused(engine: Engine, actor: Actor, sale: Sale) -> dict[str, str]:
    with pytest.raises(Invalid) as caught, write_session(engine) as session:
        sell(session, actor, sale, currency="USD")
    return caught.value.errors


def counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            model.__name__: int(session.scalar(select(func.count()).select_from(model)) or 0)
            for model in (User, Order, Registration, AuditEvent)
        }


def actions_by(engine: Engine, user_id: int | None) -> list[str]:
    with Session(engine) as session:
        query = select(AuditEvent.action).where(AuditEvent.actor_user_id == user_id)
        return list(session.scalars(query.order_by(AuditEvent.id)))


def test_a_new_person_is_sold_a_badge_paid_at_the_desk_and_checked_in(engine: Engine) -> None:
    attendee = make_product(engine, "attendee", price="65.00")
    actor = staff(engine)
    done = sold(
        engine,
        actor,
        Sale(attendee, new_person=ZED, badge_name="Zed!", reference="T-9", check_in_now=True),
    )
    assert done.checked_in
    with Session(engine) as session:
        user = session.get_one(User, done.user_id)
        assert (user.username, user.email, user.first_name, user.last_name) == (
            "zed",
            "zed@example.org",
            "Zed",
            "Zebra",
        )
        assert user.password_hash is None  # they set one with "Forgot your password?"
        registration = session.get_one(Registration, done.registration_id)
        order = session.get_one(Order, registration.order_id)
    assert (order.status, order.payment_method, order.payment_reference, order.amount) == (
        "paid",
        "desk",
        "T-9",
        6500,
    )
    assert registration.badge_name == "Zed!"
    assert registration.checked_in_at is not None
    assert registration.checked_in_by == actor.user_id
    # Every step is the service's own audit event, each naming the staff member.
    assert actions_by(engine, actor.user_id) == [
        "user.created",
        "order.created",
        "order.paid",
        "registration.checked_in",
    ]


def test_someone_with_an_account_is_sold_a_badge_without_checking_in(engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    owl = make_user(engine, "owl")
    actor = staff(engine)
    done = sold(engine, actor, Sale(attendee, user_id=owl))
    assert (done.user_id, done.checked_in) == (owl, False)
    with Session(engine) as session:
        assert session.get_one(Registration, done.registration_id).checked_in_at is None
    assert actions_by(engine, actor.user_id) == ["order.created", "order.paid"]


def test_a_sold_out_product_is_refused_and_nothing_is_written(engine: Engine) -> None:
    last = make_product(engine, "last", capacity="1")
    registered(engine, make_user(engine, "fox"), last)  # its one place, held unpaid
    actor = staff(engine)
    before = counts(engine)
    assert refused(engine, actor, Sale(last, new_person=ZED, check_in_now=True)) == {
        "product": "Sold out."
    }
    assert counts(engine) == before  # not even the new person's account


def test_staff_sell_a_product_only_staff_may_sell(engine: Engine) -> None:
    crew = make_product(engine, "crew", price="0", public=False)
    fox = make_user(engine, "fox")
    with pytest.raises(Invalid), write_session(engine) as session:  # as the attendee would
        register(session, Actor("fox"), user_id=fox, product_id=crew, currency="USD")
    done = sold(engine, staff(engine), Sale(crew, user_id=fox, check_in_now=True))
    assert done.checked_in


def test_someone_registered_already_is_refused(engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    fox = make_user(engine, "fox")
    paid(engine, registered(engine, fox, attendee))
    actor = staff(engine)
    before = counts(engine)
    assert refused(engine, actor, Sale(attendee, user_id=fox)) == {
        "user": "Already registered for this event."
    }
    assert refused(engine, actor, Sale(attendee, user_id=999_999)) == {
        "user": "Choose the person, or a new one."
    }
    assert counts(engine) == before


def test_a_new_person_is_made_by_the_account_rules_or_not_at_all(engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    make_user(engine, "zed")
    actor = staff(engine)
    before = counts(engine)
    errors = refused(engine, actor, Sale(attendee, new_person=ZED))
    assert errors == {
        "username": "'zed' is taken",
        "email": "'zed@example.org' belongs to another user",
    }
    blank = refused(engine, actor, Sale(attendee, new_person=NewPerson("", "nope", "", "")))
    assert set(blank) == {"username", "email", "firstName", "lastName"}
    assert counts(engine) == before


def test_the_people_to_sell_to_are_found_and_those_registered_said_so(engine: Engine) -> None:
    attendee = make_product(engine, "attendee")
    fox, owl = make_user(engine, "fox"), make_user(engine, "owl")
    held = registered(engine, fox, attendee)

    def found(typed: str) -> list[tuple[int, Any]]:
        with Session(engine) as session:
            people, _ = candidates(session, typed)
            return [(c.user.id, c.registration_id) for c in people]

    assert found("owl@example.org") == [(owl, None)]
    assert found("fae") == [(fox, held.registration_id), (owl, None)]  # first names
    assert found("fae ow") == [(owl, None)]  # first and last
    assert found("") == []
    assert found("nobody") == []
