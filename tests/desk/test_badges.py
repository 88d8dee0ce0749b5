"""Badges (desk/badges.py), on both databases: a batch holds only live, paid registrations,
chosen by product, flag or not yet printed, bounded and continued by keyset; marking them
printed sets the time once per registration in the caller's transaction, with an audit event
naming the staff member; a reprint is allowed and recorded again."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.db import utcnow, write_session
from regdesk.desk.badges import BATCH_MAX, PRINTED, Batch, Selection, badge, batch, mark_printed
from regdesk.registrations.models import Registration
from regdesk.registrations.ticket_codes import ticket_of
from tests.desk.support import Printing, desk_staff, printing


@pytest.fixture
def badges(engine: Engine) -> Printing:
    return printing(engine)


def staff(engine: Engine) -> Actor:
    user_id = desk_staff(engine)
    return Actor(label=f"user:{user_id}", user_id=user_id)


def chosen(engine: Engine, **selection: Any) -> Batch:
    with Session(engine) as session:
        return batch(session, Selection(**selection))


def ids(found: Batch) -> list[int]:
    return [each.registration_id for each in found.badges]


def printed_at(engine: Engine, registration_id: int) -> dt.datetime | None:
    with Session(engine) as session:
        return session.get_one(Registration, registration_id).badge_printed_at


def marked(engine: Engine, actor: Actor, *registration_ids: int) -> list[int]:
    with write_session(engine) as session:
        return mark_printed(session, actor, registration_ids)


def events(engine: Engine) -> list[AuditEvent]:
    with Session(engine) as session:
        query = select(AuditEvent).where(AuditEvent.action == PRINTED).order_by(AuditEvent.id)
        return list(session.scalars(query))


@contextmanager
def statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """The SQL the engine sends meanwhile, with its parameters."""
    sent: list[tuple[str, Any]] = []

    def note(conn: Any, cursor: Any, sql: str, parameters: Any, *args: Any) -> None:
        sent.append((sql, parameters))

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", note)


def test_a_batch_holds_only_live_paid_registrations_in_registration_order(
    engine: Engine, badges: Printing
) -> None:
    found = chosen(engine, unprinted=False)
    assert ids(found) == [badges.id("fox"), badges.id("elk"), badges.id("ram")]  # not owl, cat
    assert found.next_after is None
    fox, elk, _ = found.badges
    assert (fox.name, fox.product, fox.paid) == ("Fae the Fox", "Attendee", True)
    assert (elk.name, elk.product) == ("Fae Elk", "Sponsor")  # no badge name: the person's
    with write_session(engine) as session:
        code = session.get_one(Registration, badges.id("fox")).ticket_code
        assert fox.ticket == ticket_of(session, code)  # what the attendee's QR code holds


def test_the_badge_of_one_registration_says_whether_it_is_printable(
    engine: Engine, badges: Printing
) -> None:
    with Session(engine) as session:
        assert badge(session, badges.id("fox")).paid  # type: ignore[union-attr]
        assert not badge(session, badges.id("owl")).paid  # type: ignore[union-attr]
        assert not badge(session, badges.id("cat")).paid  # type: ignore[union-attr]
        assert badge(session, 999_999) is None


def test_a_batch_is_chosen_by_product_flag_and_not_yet_printed(
    engine: Engine, badges: Printing
) -> None:
    actor = staff(engine)
    assert ids(chosen(engine, product_id=badges.sponsor)) == [badges.id("elk")]
    assert ids(chosen(engine, product_id=badges.attendee)) == [badges.id("fox"), badges.id("ram")]
    assert ids(chosen(engine, flag_id=badges.fursuits)) == [badges.id("fox")]
    assert ids(chosen(engine, flag_id=badges.fursuits, product_id=badges.sponsor)) == []
    marked(engine, actor, badges.id("fox"))
    assert ids(chosen(engine)) == [badges.id("elk"), badges.id("ram")]  # not yet printed
    assert ids(chosen(engine, unprinted=False)) == [
        badges.id("fox"),
        badges.id("elk"),
        badges.id("ram"),
    ]


def test_a_batch_is_bounded_and_the_next_one_starts_after_its_last(
    engine: Engine, badges: Printing
) -> None:
    first = chosen(engine, limit=2)
    assert ids(first) == [badges.id("fox"), badges.id("elk")]
    assert first.next_after == badges.id("elk")
    second = chosen(engine, limit=2, after=first.next_after)
    assert (ids(second), second.next_after) == ([badges.id("ram")], None)
    # However many are asked for, the query asks the database for at most BATCH_MAX + 1 rows
    # (one more tells whether another batch follows): never the whole event.
    with statements(engine) as sent:
        chosen(engine, limit=100_000)
    (query,) = [(sql, p) for sql, p in sent if "registrations.badge_printed_at IS NULL" in sql]
    assert "LIMIT" in query[0]
    parameters = query[1].values() if isinstance(query[1], dict) else query[1]
    assert BATCH_MAX + 1 in parameters
    assert 100_001 not in parameters


def test_marking_printed_sets_the_time_and_names_the_staff_member(
    engine: Engine, badges: Printing
) -> None:
    actor = staff(engine)
    before = utcnow()
    done = marked(engine, actor, *(badges.id(n) for n in ("fox", "owl", "cat", "elk")), 999_999)
    after = utcnow()
    assert done == [badges.id("fox"), badges.id("elk")]  # unpaid and cancelled are not printed
    for name in ("fox", "elk"):
        moment = printed_at(engine, badges.id(name))
        assert moment is not None
        assert before <= moment <= after
    assert printed_at(engine, badges.id("owl")) is None
    assert printed_at(engine, badges.id("cat")) is None
    assert printed_at(engine, badges.id("ram")) is None  # not asked
    recorded = events(engine)
    assert [e.target_id for e in recorded] == [str(badges.id("fox")), str(badges.id("elk"))]
    for each in recorded:
        assert (each.actor_user_id, each.target_type) == (actor.user_id, "registration")
        assert each.details == {"printedBy": actor.user_id, "batch": 2}


def test_marking_a_batch_printed_is_one_transaction_with_its_audit_events(
    engine: Engine, badges: Printing
) -> None:
    """Nothing is committed on its own: a transaction that goes on to fail leaves no badge
    marked and no event."""
    actor = staff(engine)

    def fail_after_marking() -> None:
        with write_session(engine) as session:
            assert len(mark_printed(session, actor, [badges.id("fox"), badges.id("elk")])) == 2
            raise RuntimeError("the page failed after marking")

    with pytest.raises(RuntimeError):
        fail_after_marking()
    assert printed_at(engine, badges.id("fox")) is None
    assert printed_at(engine, badges.id("elk")) is None
    assert events(engine) == []


def test_a_badge_may_be_printed_again_and_each_time_is_recorded(
    engine: Engine, badges: Printing
) -> None:
    actor = staff(engine)
    marked(engine, actor, badges.id("fox"))
    first = printed_at(engine, badges.id("fox"))
    assert marked(engine, actor, badges.id("fox")) == [badges.id("fox")]
    again = printed_at(engine, badges.id("fox"))
    assert first is not None
    assert again is not None
    assert again >= first
    assert [e.target_id for e in events(engine)] == [str(badges.id("fox"))] * 2


def test_printing_leaves_the_registration_record_alone(engine: Engine, badges: Printing) -> None:
    """The API's record shows nothing of printing: its `updatedAt` stays."""
    with Session(engine) as session:
        updated = session.get_one(Registration, badges.id("fox")).updated_at
    marked(engine, staff(engine), badges.id("fox"))
    with Session(engine) as session:
        assert session.get_one(Registration, badges.id("fox")).updated_at == updated
