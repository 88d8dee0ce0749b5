"""`regdesk demo`'s registrations: most users registered, most of them paid, no product sold
past its capacity, and every row as the rest of regdesk reads it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import Engine, select

from regdesk.audit.service import Actor
from regdesk.db import read_session
from regdesk.demo import DemoResult, load_demo
from regdesk.demo.logins import ATTENDEE, LOGINS
from regdesk.departments.models import DepartmentLead
from regdesk.events.models import Event, option_value_error
from regdesk.registrations.models import (
    LIVE_STATUSES,
    Order,
    Product,
    Registration,
    RegistrationFlagLink,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.registrations.service import badge_name
from regdesk.users.models import User
from tests.conftest import Cli

ACTOR = Actor(label="test:demo")
USERS, VOLUNTEERS = 300, 60


@pytest.fixture
def loaded(engine: Engine) -> DemoResult:
    return load_demo(engine, users=USERS, volunteers=VOLUNTEERS, seed=7, actor=ACTOR)


def rows(engine: Engine, model: Any) -> list[Any]:
    with read_session(engine) as session:
        return list(session.scalars(select(model)))


def test_most_users_are_registered_and_most_of_them_paid(
    loaded: DemoResult, engine: Engine
) -> None:
    orders = {o.id: o for o in rows(engine, Order)}
    registrations = rows(engine, Registration)
    current = rows(engine, Event)
    assert len(registrations) == loaded.registrations == round(USERS * 0.8)
    assert {r.event_id for r in registrations} == {e.id for e in current if e.is_current}
    live = [r for r in registrations if orders[r.order_id].status in LIVE_STATUSES]
    assert len(live) > USERS * 0.75
    assert len({r.user_id for r in live}) == len(live)  # one live registration each
    statuses = Counter(o.status for o in orders.values())
    assert statuses["paid"] == loaded.paid_registrations > len(registrations) * 0.8
    assert set(statuses) == {"paid", "unpaid", "cancelled", "refunded"}
    users = {r.user_id for r in registrations}
    assert set(LOGINS) <= users
    assert {lead.user_id for lead in rows(engine, DepartmentLead)} <= users
    attendee = next(r for r in registrations if r.user_id == ATTENDEE.user_id)
    assert orders[attendee.order_id].status == "paid"  # the attendee login has a ticket


def test_no_product_is_sold_past_its_capacity(loaded: DemoResult, engine: Engine) -> None:
    products = {p.id: p for p in rows(engine, Product)}
    held = Counter(o.product_id for o in rows(engine, Order) if o.status in LIVE_STATUSES)
    limited = [p for p in products.values() if p.capacity is not None]
    assert limited
    for product in limited:
        assert held[product.id] <= product.capacity, product.name
    assert any(held[p.id] == p.capacity for p in limited)  # demand met a sold-out product
    assert any(not p.public for p in products.values())  # staff-only complimentary badges
    assert any(p.closes_at is not None for p in products.values())  # a sale window
    assert loaded.products == len(products)


def test_orders_and_registrations_agree(loaded: DemoResult, engine: Engine) -> None:
    products = {p.id: p for p in rows(engine, Product)}
    registrations = {r.order_id: r for r in rows(engine, Registration)}
    orders = rows(engine, Order)
    assert len({o.number for o in orders}) == len(orders)
    for order in orders:
        assert order.number.isdigit()
        assert not order.number.startswith("0")
        assert order.amount == products[order.product_id].price
        assert order.currency == "USD"
        assert order.user_id == registrations[order.id].user_id
        paid = order.status in ("paid", "refunded")
        assert (order.payment_method is not None) == paid, order.status
        assert (order.paid_at is not None) == paid
        if paid:
            assert order.paid_at >= order.created_at
        ended = registrations[order.id].ended_at is not None
        assert ended == (order.status not in LIVE_STATUSES)
        assert (order.payment_method == "comp") == (products[order.product_id].name == "staff")
    codes = [r.ticket_code for r in registrations.values()]
    assert len(set(codes)) == len(codes)
    names = [r.badge_name for r in registrations.values()]
    assert sum(name is not None for name in names) > len(names) * 0.7
    for name in names:
        assert badge_name(name) == name


def test_answers_fit_their_options_and_some_registrations_have_flags(
    loaded: DemoResult, engine: Engine
) -> None:
    options = {o.id: o for o in rows(engine, RegistrationOption)}
    assert {o.type for o in options.values()} == {"select", "text"}
    answers = rows(engine, RegistrationOptionValue)
    assert {a.option_id for a in answers} == set(options)
    for answer in answers:
        option = options[answer.option_id]
        assert option_value_error(option.type, option.choices, answer.value) is None
    assert len(rows(engine, RegistrationFlagLink)) > 0


def test_the_number_of_registrations_can_be_asked_for(engine: Engine) -> None:
    result = load_demo(engine, users=50, volunteers=5, registrations=10, actor=ACTOR)
    assert len(rows(engine, Registration)) == result.registrations == 10


def test_more_registrations_than_users_are_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="registrations"):
        load_demo(engine, users=50, volunteers=5, registrations=51, actor=ACTOR)
    assert rows(engine, User) == []


def test_the_command_takes_a_number_of_registrations(cli: Cli) -> None:
    made = json.loads(
        cli.ok(
            "demo", "--users", "40", "--volunteers", "4", "--registrations", "0", "--json"
        ).stdout
    )
    assert (made["registrations"], made["paid_registrations"]) == (0, 0)
