"""The registration service (registrations/service.py): answers checked against the event's
options, badge names, editing until the deadline, changing an unpaid order's product within
capacity, flags, and the places left per product. On both databases."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest
from sqlalchemy import Engine, select

from regdesk.db import read_session, utcnow, write_session
from regdesk.errors import Invalid
from regdesk.events.models import Event
from regdesk.events.service import current_event_for_writing
from regdesk.registrations.models import (
    Order,
    OrderStatus,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationOption,
)
from regdesk.registrations.ordering import Placed, end_order
from regdesk.registrations.service import (
    answers_of,
    badge_name,
    change_product,
    check_answers,
    edit_registration,
    products_on_offer,
    register,
    set_flags,
)
from tests.api.support import audit_events, headers
from tests.client import TestClient
from tests.conftest import Apps
from tests.registrations.test_api import pay, registration_of
from tests.registrations.test_ordering import ACTOR, order, product, race, refused
from tests.web.support import make_user

SIZES = ["S", "M", "L"]


def add_option(
    engine: Engine, name: str, type: str, choices: list[str] | None = None, position: int = 0
) -> int:
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        option = RegistrationOption(
            event_id=event.id, name=name, type=type, choices=choices, position=position
        )
        session.add(option)
        session.flush()
        return option.id


def options(engine: Engine) -> list[RegistrationOption]:
    with read_session(engine) as session:
        return list(session.scalars(select(RegistrationOption).order_by(RegistrationOption.id)))


def registered(
    engine: Engine,
    user_id: int,
    product_id: int,
    *,
    badge: Any = None,
    answers: Mapping[str, Any] | None = None,
) -> Placed:
    with write_session(engine) as session:
        return register(
            session,
            ACTOR,
            user_id=user_id,
            product_id=product_id,
            currency="USD",
            badge=badge,
            answers=answers,
        )


def edit(
    engine: Engine,
    registration_id: int,
    *,
    badge: Any = None,
    answers: Mapping[str, Any] | None = None,
    edits_until: dt.datetime | None = None,
) -> list[str]:
    with write_session(engine) as session:
        return edit_registration(
            session,
            ACTOR,
            session.get_one(Registration, registration_id),
            badge=badge,
            answers=answers or {},
            edits_until=edits_until,
        )


# --- answers -------------------------------------------------------------------------------


def test_answers_are_checked_against_the_events_options(engine: Engine) -> None:
    size = add_option(engine, "T-shirt size", "select", SIZES)
    diet = add_option(engine, "Dietary needs", "text")
    nights = add_option(engine, "Nights", "number")
    days = add_option(engine, "Days", "multi", ["Fri", "Sat", "Sun"])
    known = options(engine)

    assert check_answers(
        known, {"T-shirt size": "M", "Dietary needs": "vegan", "Nights": 2, "Days": ["Sat"]}
    ) == {size: "M", diet: "vegan", nights: 2, days: ["Sat"]}
    assert check_answers(known, {"Nights": 2.5}) == {nights: 2.5}
    # Empty is no answer, whatever the option's type.
    empty = {"T-shirt size": "", "Dietary needs": None, "Nights": None, "Days": []}
    assert check_answers(known, empty) == {}
    assert check_answers(known, {}) == {}

    assert refused(lambda: check_answers(known, {"Shoe size": "42"})) == {
        "options.Shoe size": "The event has no such registration option."
    }
    wrong_types = {"T-shirt size": 3, "Dietary needs": ["vegan"], "Nights": "2", "Days": "Sat"}
    assert refused(lambda: check_answers(known, wrong_types)) == {
        "options.T-shirt size": "The answer must be a string for an option of type select.",
        "options.Dietary needs": "The answer must be a string for an option of type text.",
        "options.Nights": "The answer must be a number for an option of type number.",
        "options.Days": "The answer must be an array of strings for an option of type multi.",
    }
    assert refused(lambda: check_answers(known, {"Nights": True})) == {
        "options.Nights": "The answer must be a number for an option of type number."
    }
    not_offered = refused(lambda: check_answers(known, {"T-shirt size": "XXL", "Days": ["Mon"]}))
    assert not_offered == {
        "options.T-shirt size": "The answer 'XXL' is not one of the choices ['S', 'M', 'L'].",
        "options.Days": "The answer 'Mon' is not one of the choices ['Fri', 'Sat', 'Sun'].",
    }


def test_an_answer_json_cannot_hold_or_no_form_takes_is_refused(engine: Engine) -> None:
    add_option(engine, "Nights", "number")
    add_option(engine, "Dietary needs", "text")
    add_option(engine, "Days", "multi")
    known = options(engine)
    for number in (float("nan"), float("inf"), -float("inf"), 10**13, 10**400):
        assert list(refused(lambda n=number: check_answers(known, {"Nights": n}))) == [
            "options.Nights"
        ], number
    assert list(refused(lambda: check_answers(known, {"Dietary needs": "x" * 1001}))) == [
        "options.Dietary needs"
    ]
    assert list(refused(lambda: check_answers(known, {"Days": [str(i) for i in range(51)]}))) == [
        "options.Days"
    ]
    assert check_answers(known, {"Dietary needs": "x" * 1000, "Nights": 10**12}) != {}


def test_register_refuses_bad_answers_and_a_bad_badge_name_at_once_and_writes_nothing(
    engine: Engine,
) -> None:
    add_option(engine, "T-shirt size", "select", SIZES)
    fox = make_user(engine, "fox")
    attendee = product(engine)
    errors = refused(
        lambda: registered(engine, fox, attendee, badge="a\x07b", answers={"T-shirt size": "XL"})
    )
    assert list(errors) == ["badgeName", "options.T-shirt size"]
    with read_session(engine) as session:
        assert session.scalars(select(Order)).all() == []
        assert session.scalars(select(Registration)).all() == []


def test_options_show_in_the_record_in_their_position_order_and_renamed_at_once(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    # Made in another order than they are asked (position), and answered out of order.
    diet = add_option(engine, "Dietary needs", "text", position=30)
    add_option(engine, "T-shirt size", "select", SIZES, position=10)
    add_option(engine, "Nights", "number", position=20)
    add_option(engine, "Unanswered", "text", position=5)
    fox = make_user(engine, "fox")
    answers = {"Dietary needs": "vegan", "Nights": 3, "T-shirt size": "L"}
    registered(engine, fox, product(engine), answers=answers)
    auth = headers(apps, "registration:read")

    record = registration_of(client, auth, fox).json()

    assert record["options"] == [
        {"name": "T-shirt size", "type": "select", "value": "L"},
        {"name": "Nights", "type": "number", "value": 3},
        {"name": "Dietary needs", "type": "text", "value": "vegan"},
    ]
    with write_session(engine) as session:
        session.get_one(RegistrationOption, diet).name = "Diet"
    assert registration_of(client, auth, fox).json()["options"][2] == {
        "name": "Diet",
        "type": "text",
        "value": "vegan",
    }
    with write_session(engine) as session:
        session.get_one(RegistrationOption, diet).position = 0
    assert registration_of(client, auth, fox).json()["options"] == [
        {"name": "Diet", "type": "text", "value": "vegan"},
        {"name": "T-shirt size", "type": "select", "value": "L"},
        {"name": "Nights", "type": "number", "value": 3},
    ]


# --- badge names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("  Fae the Fox  ", "Fae the Fox"),  # trimmed
        ("Fae \t the\n\r\nFox", "Fae the Fox"),  # each run of whitespace one space
        ("", None),  # empty is none: the badge shows the person's name
        (" \n\t ", None),
        (None, None),
        ("x" * 100, "x" * 100),
        ("x" * 50 + " " * 200 + "y" * 49, "x" * 50 + " " + "y" * 49),  # measured once collapsed
        ("Fae 🏳️‍🌈", "Fae 🏳️‍🌈"),  # an emoji sequence keeps its joiner (ZWJ)
        ("می‌خواهم", "می‌خواهم"),  # Persian keeps its non-joiner (ZWNJ)
        ("宮崎 駿", "宮崎 駿"),
    ],
)
def test_a_badge_name_is_trimmed_and_collapsed(given: Any, stored: str | None) -> None:
    assert badge_name(given) == stored


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("a\x00b", "may not hold control characters"),
        ("bell\x07", "may not hold control characters"),
        ("\x1b[31mred", "may not hold control characters"),
        ("\x7fdel", "may not hold control characters"),
        ("abc\u202edcba", "may not hold control characters"),  # prints reversed
        ("a\u2066b", "may not hold control characters"),
        ("x" * 101, "is longer than 100 characters"),
        (12, "must be a string, not a number"),
        (["Fae"], "must be a string, not an array"),
    ],
)
def test_a_badge_name_with_control_characters_or_too_long_is_refused(
    given: Any, message: str
) -> None:
    with pytest.raises(ValueError, match="^" + message + "$"):
        badge_name(given)


# --- editing -------------------------------------------------------------------------------


def test_an_edit_is_refused_after_the_deadline_and_on_a_cancelled_registration(
    engine: Engine,
) -> None:
    fox = make_user(engine, "fox")
    placed = registered(engine, fox, product(engine), badge="Fae")
    now = utcnow()
    passed = now - dt.timedelta(seconds=1)
    assert refused(lambda: edit(engine, placed.registration.id, badge="X", edits_until=passed)) == {
        "registration": "Registrations can no longer be changed."
    }
    assert refused(lambda: edit(engine, placed.registration.id, badge="X", edits_until=now)) == {
        "registration": "Registrations can no longer be changed."
    }
    later = now + dt.timedelta(hours=1)
    assert edit(engine, placed.registration.id, badge="Fae B", edits_until=later) == ["badgeName"]
    assert edit(engine, placed.registration.id, badge="Fae C", edits_until=None) == ["badgeName"]
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, placed.order.id), OrderStatus.CANCELLED)
    assert refused(lambda: edit(engine, placed.registration.id, badge="Fae D")) == {
        "registration": "This registration was cancelled."
    }
    with read_session(engine) as session:
        assert session.get_one(Registration, placed.registration.id).badge_name == "Fae C"


def test_an_edit_records_what_changed_and_clears_options_not_given(engine: Engine) -> None:
    size = add_option(engine, "T-shirt size", "select", SIZES, position=1)
    add_option(engine, "Dietary needs", "text", position=2)
    nights = add_option(engine, "Nights", "number", position=3)
    fox = make_user(engine, "fox")
    answers = {"T-shirt size": "M", "Dietary needs": "vegan", "Nights": 2}
    placed = registered(engine, fox, product(engine), badge="Fae", answers=answers)
    registration_id = placed.registration.id

    changed = edit(engine, registration_id, badge="Fae", answers={"T-shirt size": "L", "Nights": 2})

    assert changed == ["T-shirt size", "Dietary needs"]
    [event] = audit_events(engine, "registration.updated")
    assert (event.actor, event.target_type, event.target_id) == (
        "test",
        "registration",
        str(registration_id),
    )
    assert event.details == {"fields": ["T-shirt size", "Dietary needs"]}
    assert (
        edit(engine, registration_id, badge=" Fae ", answers={"T-shirt size": "L", "Nights": 2})
        == []
    )
    assert len(audit_events(engine, "registration.updated")) == 1  # nothing changed: no event
    assert edit(
        engine, registration_id, badge="Faye", answers={"T-shirt size": "L", "Nights": 2}
    ) == ["badgeName"]
    assert audit_events(engine, "registration.updated")[-1].details == {"fields": ["badgeName"]}
    with read_session(engine) as session:
        assert session.get_one(Registration, registration_id).badge_name == "Faye"
        assert answers_of(session, registration_id) == {size: "L", nights: 2}


# --- changing product ----------------------------------------------------------------------


def test_the_product_changes_while_unpaid_only_at_the_new_price(engine: Engine) -> None:
    fox, owl = make_user(engine, "fox"), make_user(engine, "owl")
    attendee = product(engine, price=6500)
    sponsor = product(engine, "sponsor", price=12000)
    unpaid, paid = order(engine, fox, attendee), order(engine, owl, attendee)
    pay(engine, paid.order.id)

    with write_session(engine) as session:
        change_product(session, ACTOR, session.get_one(Order, unpaid.order.id), sponsor)
    with write_session(engine) as session:
        assert refused(
            lambda: change_product(session, ACTOR, session.get_one(Order, paid.order.id), sponsor)
        ) == {"product": "Only an unpaid order can change product."}

    with read_session(engine) as session:
        moved = session.get_one(Order, unpaid.order.id)
        assert (moved.product_id, moved.amount) == (sponsor, 12000)
        kept = session.get_one(Order, paid.order.id)
        assert (kept.product_id, kept.amount) == (attendee, 6500)
    [event] = audit_events(engine, "order.product_changed")
    assert (event.target_type, event.target_id) == ("order", unpaid.order.number)
    assert event.details == {
        "before": {"product": "attendee", "amount": 6500},
        "after": {"product": "sponsor", "amount": 12000},
    }


def test_the_product_never_changes_beyond_its_capacity(engine: Engine) -> None:
    users = [make_user(engine, f"user{i}") for i in range(6)]
    attendee = product(engine)
    full = product(engine, "full", capacity=1)
    order(engine, users[0], full)
    placed = [order(engine, user, attendee) for user in users[1:]]
    with write_session(engine) as session:
        earlier = Event(name="Last year")
        session.add(earlier)
        session.flush()
        elsewhere = Product(event_id=earlier.id, name="attendee", price=100)
        session.add(elsewhere)
        session.flush()
        elsewhere_id = elsewhere.id

    for target, problem in ((full, "Sold out."), (elsewhere_id, "No such product."),
                            (999999, "No such product.")):  # fmt: skip
        with write_session(engine) as session:
            first = session.get_one(Order, placed[0].order.id)
            with pytest.raises(Invalid) as raised:
                change_product(session, ACTOR, first, target)
            assert raised.value.errors == {"product": problem}

    last = product(engine, "last", capacity=2)

    def move(i: int) -> None:
        with write_session(engine) as session:
            change_product(session, ACTOR, session.get_one(Order, placed[i].order.id), last)

    moved, errors = race(len(placed), move)

    assert moved == 2
    assert [e.errors for e in errors if isinstance(e, Invalid)] == [{"product": "Sold out."}] * 3
    with read_session(engine) as session:
        held = session.scalars(select(Order).where(Order.product_id == last)).all()
        assert len(held) == 2


# --- flags ---------------------------------------------------------------------------------


def make_flag(engine: Engine, short_name: str) -> int:
    with write_session(engine) as session:
        made = RegistrationFlag(
            event_id=current_event_for_writing(session).id, short_name=short_name
        )
        session.add(made)
        session.flush()
        return made.id


def flags_of(engine: Engine, registration_id: int, flag_ids: list[int]) -> bool:
    with write_session(engine) as session:
        return set_flags(session, ACTOR, session.get_one(Registration, registration_id), flag_ids)


def test_set_flags_refuses_an_unknown_flag_and_records_before_and_after(engine: Engine) -> None:
    fox = make_user(engine, "fox")
    registration_id = order(engine, fox, product(engine)).registration.id
    fursuits, staff, press = (make_flag(engine, n) for n in ("fursuits", "staff", "press"))

    assert refused(lambda: flags_of(engine, registration_id, [fursuits, 999999])) == {
        "flags": "No such flag."
    }
    assert audit_events(engine, "registration.flags_changed") == []
    assert flags_of(engine, registration_id, [staff, fursuits]) is True
    assert flags_of(engine, registration_id, [fursuits, staff]) is False  # the same: no change
    assert flags_of(engine, registration_id, [press, fursuits]) is True
    assert flags_of(engine, registration_id, []) is True

    events = audit_events(engine, "registration.flags_changed")
    assert [(e.target_type, e.target_id) for e in events] == [
        ("registration", str(registration_id))
    ] * 3
    assert [e.details for e in events] == [
        {"before": [], "after": ["fursuits", "staff"]},
        {"before": ["fursuits", "staff"], "after": ["fursuits", "press"]},
        {"before": ["fursuits", "press"], "after": []},
    ]


# --- places left ---------------------------------------------------------------------------


def test_products_on_offer_count_the_places_left(engine: Engine) -> None:
    users = [make_user(engine, f"user{i}") for i in range(5)]
    sponsor = product(engine, "sponsor", capacity=3, position=2)
    attendee = product(engine, "attendee", position=1)  # no limit
    tiny = product(engine, "tiny", capacity=1, position=3)
    unpaid = order(engine, users[0], sponsor)
    paid = order(engine, users[1], sponsor)
    pay(engine, paid.order.id)
    cancelled = order(engine, users[2], sponsor)
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, cancelled.order.id), OrderStatus.CANCELLED)
    order(engine, users[3], tiny)
    order(engine, users[4], attendee)
    assert unpaid.order.status == "unpaid"

    with read_session(engine) as session:
        event_id = current_event_for_writing(session).id
        offer = [(p.id, left) for p, left in products_on_offer(session, event_id)]

    # Display order; an unpaid order holds its place, a cancelled one does not.
    assert offer == [(attendee, None), (sponsor, 1), (tiny, 0)]
