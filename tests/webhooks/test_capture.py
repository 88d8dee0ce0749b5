"""Events in the writer's transaction (events.md: no change without its event, no event without
its change), on both databases, whichever way the change is made: an import, an organizer's
review, an order paid or cancelled, a check-in at the desk, a user deleted, an API call."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, delete, select
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.registrations.test_api import pay
from tests.registrations.test_ordering import order, product
from tests.transfer.support import import_
from tests.web.support import make_user
from tests.webhooks.support import endpoint, events_written

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.desk.check_in import check_in
from regdesk.registrations.models import Order, OrderStatus, Registration
from regdesk.registrations.ordering import end_order
from regdesk.roles.models import Role
from regdesk.users.models import User
from regdesk.volunteers.models import Volunteer
from regdesk.volunteers.review import set_department_states

pytestmark = pytest.mark.postgres
ACTOR = Actor("test")


class Rollback(Exception):
    pass


def a_volunteer(engine: Engine, states: list[str]) -> dict[str, int]:
    result = import_(
        engine,
        {
            "roles": [{"name": "Staff", "staff": True}],
            "users": [
                {
                    "username": "fox",
                    "email": "fox@example.org",
                    "firstName": "Fae",
                    "lastName": "Fox",
                    "roles": [],
                }
            ],
            "departments": [{"name": "Security", "email": "sec@example.org"}],
            "volunteers": [
                {
                    "user": "fox",
                    "contactMethods": [],
                    "departments": [{"name": "Security", "states": states}],
                }
            ],
        },
    )
    with write_session(engine) as session:
        volunteer = session.scalars(select(Volunteer.id)).one()
    return {"user": result.users["fox"], "department": result.departments["Security"],
            "volunteer": volunteer}  # fmt: skip


def names(engine: Engine) -> list[str]:
    return [name for name, _ in events_written(engine)]


def test_no_endpoint_no_event(engine: Engine) -> None:
    a_volunteer(engine, ["interest"])
    assert events_written(engine) == []


def test_an_import_writes_each_record_s_events(engine: Engine) -> None:
    endpoint(engine, "http://127.0.0.1:9/")
    ids = a_volunteer(engine, ["interest", "assignment"])
    written = events_written(engine)
    assert sorted(name for name, _ in written) == [
        "user-updated",
        "volunteer-assigned",
        "volunteer-submitted",
    ]
    data = dict(written)
    assert data["volunteer-submitted"]["volunteer"]["id"] == str(ids["volunteer"])
    assert data["volunteer-submitted"]["user"]["id"] == str(ids["user"])
    assigned = data["volunteer-assigned"]
    assert assigned["department"]["id"] == str(ids["department"])
    assert assigned["department"]["name"] == "Security"
    assert assigned["volunteer"]["departments"][0]["states"] == ["interest", "assignment"]


def test_an_endpoint_gets_only_the_events_it_wants(engine: Engine) -> None:
    endpoint(engine, "http://127.0.0.1:9/", "volunteer-submitted")
    a_volunteer(engine, ["interest"])
    assert names(engine) == ["volunteer-submitted"]


def test_an_organizer_assigns_and_unassigns(engine: Engine) -> None:
    ids = a_volunteer(engine, ["interest"])
    endpoint(engine, "http://127.0.0.1:9/")

    def review(states: set[str]) -> None:
        with write_session(engine) as session:
            volunteer = session.get_one(Volunteer, ids["volunteer"])
            set_department_states(session, ACTOR, volunteer, ids["department"], states)

    review({"interest", "assignment"})
    review({"interest"})
    review({"experience", "interest"})
    assert names(engine) == ["volunteer-assigned", "volunteer-unassigned", "volunteer-updated"]


def test_a_user_deleted_deletes_their_volunteer(engine: Engine) -> None:
    ids = a_volunteer(engine, ["assignment"])
    endpoint(engine, "http://127.0.0.1:9/")
    with write_session(engine) as session:
        session.execute(delete(User).where(User.id == ids["user"]))
    assert events_written(engine) == [
        ("volunteer-deleted", {"volunteer": {"id": str(ids["volunteer"])}})
    ]


def test_an_order_placed_paid_checked_in_and_cancelled(engine: Engine) -> None:
    user_id = make_user(engine, "fox", password=None)
    product_id = product(engine)
    endpoint(engine, "http://127.0.0.1:9/", "registration-updated")
    placed = order(engine, user_id, product_id)
    pay(engine, placed.order.id)
    with write_session(engine) as session:
        check_in(session, ACTOR, session.get_one(Registration, placed.registration.id))
    with write_session(engine) as session:
        end_order(session, ACTOR, session.get_one(Order, placed.order.id), OrderStatus.REFUNDED)
    written = events_written(engine)
    assert [name for name, _ in written] == ["registration-updated"] * 4
    assert {data["user"]["id"] for _, data in written} == {str(user_id)}
    assert written[1][1]["registration"] != written[0][1]["registration"]


def test_an_api_call_writes_its_event(engine: Engine, client: TestClient, apps: Apps) -> None:
    ids = a_volunteer(engine, ["interest"])
    endpoint(engine, "http://127.0.0.1:9/", "volunteer-updated")
    token = apps.service_token("user:roles:update")
    with write_session(engine) as session:
        staff = session.scalars(select(Role.id)).one()
    answer = client.put(
        f"/api/v0/users/{ids['user']}/roles/{staff}",
        json={"scope": "convention"},
        headers=bearer(token),
    )
    assert answer.status_code < 300, answer.text
    [(name, data)] = events_written(engine)
    assert name == "volunteer-updated"
    assert data["volunteer"]["user"]["isStaff"] is True


@pytest.mark.parametrize(
    "change",
    ["user", "review", "delete"],
)
def test_a_change_and_its_event_roll_back_together(engine: Engine, change: str) -> None:
    ids = a_volunteer(engine, ["interest"])
    endpoint(engine, "http://127.0.0.1:9/")
    before = len(events_written(engine))

    def failing() -> None:
        with write_session(engine) as session:
            if change == "review":
                volunteer = session.get_one(Volunteer, ids["volunteer"])
                set_department_states(session, ACTOR, volunteer, ids["department"], {"assignment"})
            elif change == "delete":
                session.execute(delete(Volunteer))
            else:
                session.execute(User.__table__.update().values(first_name="Eve"))
            session.flush()
            raise Rollback

    with pytest.raises(Rollback):
        failing()
    assert len(events_written(engine)) == before
    with write_session(engine) as session:
        assert session.scalars(select(Volunteer.id)).all() == [ids["volunteer"]]
        assert session.scalars(select(User.first_name)).all() == ["Fae"]


def test_each_change_commits_with_its_event(engine: Engine) -> None:
    """Every event written names a change that is there, and every change has its event."""
    ids = a_volunteer(engine, ["interest"])
    endpoint(engine, "http://127.0.0.1:9/")
    with write_session(engine) as session:
        session.execute(User.__table__.update().values(first_name="Eve"))
        volunteer = session.get_one(Volunteer, ids["volunteer"])
        set_department_states(session, ACTOR, volunteer, ids["department"], {"assignment"})
    written: dict[str, Any] = dict(events_written(engine))
    assert written["user-updated"]["user"]["firstName"] == "Eve"
    assert written["volunteer-assigned"]["user"]["firstName"] == "Eve"
