"""Checking in (desk/check_in.py), on both databases: at most once however many desks race
for it, only once paid (or by an administrator's override), every check-in audited."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.desk.check_in import AlreadyCheckedIn, CheckIn, NotCheckable, check_in
from regdesk.registrations.models import Order, PaymentMethod, Registration
from regdesk.registrations.ordering import mark_paid
from tests.desk.support import desk_staff, queue
from tests.web.support import make_user

DESKS = 6


def staff_actor(user_id: int) -> Actor:
    return Actor(label=f"user:{user_id}", user_id=user_id)


def attempt(engine: Engine, registration_id: int, actor: Actor, **options: bool) -> CheckIn:
    with write_session(engine) as session:
        registration = session.get_one(Registration, registration_id)
        return check_in(session, actor, registration, **options)


def events(engine: Engine, action: str) -> list[AuditEvent]:
    with Session(engine) as session:
        return list(session.scalars(select(AuditEvent).where(AuditEvent.action == action)))


def test_of_desks_racing_for_one_registration_exactly_one_checks_it_in(
    database_url: str, engine: Engine
) -> None:
    """Each desk its own engine (its own connections), released at once: one wins, every
    other is told who did it and when."""
    people = queue(engine)
    staff = [desk_staff(engine, f"desk{i}") for i in range(DESKS)]
    engines = [make_engine(database_url) for _ in range(DESKS)]
    barrier = threading.Barrier(DESKS)
    won: list[CheckIn] = []
    told: list[CheckIn] = []
    failed: list[BaseException] = []

    def desk(i: int) -> None:
        barrier.wait()
        try:
            with write_session(engines[i]) as session:
                card = session.get_one(Registration, people.fox.registration_id)
                won.append(check_in(session, staff_actor(staff[i]), card))
        except AlreadyCheckedIn as refused:
            told.append(refused.earlier)
        except BaseException as error:
            failed.append(error)

    threads = [threading.Thread(target=desk, args=(i,)) for i in range(DESKS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for each in engines:
            each.dispose()
    assert failed == []
    assert len(won) == 1
    assert len(told) == DESKS - 1
    winner = won[0]
    k = staff.index(winner.by_user_id or 0)
    assert set(told) == {CheckIn(winner.at, staff[k], f"Fae Desk{k} (desk{k})")}
    stored = people.registration(engine, people.fox)
    assert (stored.checked_in_at, stored.checked_in_by) == (winner.at, winner.by_user_id)
    recorded = events(engine, "registration.checked_in")
    assert [(e.actor_user_id, e.target_id) for e in recorded] == [
        (winner.by_user_id, str(people.fox.registration_id))
    ]


def test_a_second_check_in_is_refused_saying_when_and_by_whom(engine: Engine) -> None:
    people = queue(engine)
    dee, eve = desk_staff(engine, "dee"), desk_staff(engine, "eve")
    first = attempt(engine, people.fox.registration_id, staff_actor(dee))
    with pytest.raises(AlreadyCheckedIn) as refused:
        attempt(engine, people.fox.registration_id, staff_actor(eve))
    assert refused.value.earlier == CheckIn(first.at, dee, "Fae Dee (dee)")
    assert len(events(engine, "registration.checked_in")) == 1


def test_an_unpaid_registration_is_checked_in_once_the_desk_takes_the_payment(
    engine: Engine,
) -> None:
    people = queue(engine)
    dee = desk_staff(engine)
    with pytest.raises(NotCheckable) as refused:
        attempt(engine, people.owl.registration_id, staff_actor(dee))
    assert (refused.value.status, refused.value.due) == ("unpaid", 6500)
    assert people.registration(engine, people.owl).checked_in_at is None
    with write_session(engine) as session:
        order = session.get_one(Order, people.owl.order_id)
        mark_paid(session, staff_actor(dee), order, method=PaymentMethod.DESK, reference="R-1")
    attempt(engine, people.owl.registration_id, staff_actor(dee))
    assert people.registration(engine, people.owl).checked_in_by == dee


def test_a_cancelled_registration_is_not_checked_in(engine: Engine) -> None:
    people = queue(engine)
    with pytest.raises(NotCheckable) as refused:
        attempt(engine, people.cat.registration_id, staff_actor(desk_staff(engine)))
    assert (refused.value.status, refused.value.due) == ("cancelled", 0)
    assert people.registration(engine, people.cat).checked_in_at is None
    assert events(engine, "registration.checked_in") == []


def test_only_an_administrator_overrides_and_the_override_is_audited_as_such(
    engine: Engine,
) -> None:
    people = queue(engine)
    dee = desk_staff(engine)
    ada = make_user(engine, "ada", permissions=["admin"])
    with pytest.raises(PermissionError):
        attempt(engine, people.owl.registration_id, staff_actor(dee), override=True)
    attempt(engine, people.owl.registration_id, staff_actor(ada), override=True)
    attempt(engine, people.cat.registration_id, staff_actor(ada), override=True)
    overrides = events(engine, "registration.checked_in_by_override")
    assert [(e.actor_user_id, e.target_id, e.details["orderStatus"]) for e in overrides] == [
        (ada, str(people.owl.registration_id), "unpaid"),
        (ada, str(people.cat.registration_id), "cancelled"),
    ]
    # A paid one checked in with the override asked needed none: an ordinary check-in.
    attempt(engine, people.fox.registration_id, staff_actor(ada), override=True)
    assert len(events(engine, "registration.checked_in_by_override")) == 2
    assert [e.actor_user_id for e in events(engine, "registration.checked_in")] == [ada]


def test_every_check_in_is_an_audit_event_naming_the_staff_member(engine: Engine) -> None:
    people = queue(engine)
    dee = desk_staff(engine)
    attempt(engine, people.fox.registration_id, staff_actor(dee))
    (event,) = events(engine, "registration.checked_in")
    assert (event.actor, event.actor_user_id) == (f"user:{dee}", dee)
    assert (event.target_type, event.target_id) == ("registration", str(people.fox.registration_id))
    assert event.details == {"order": people.fox.number, "orderStatus": "paid", "checkedInBy": dee}
