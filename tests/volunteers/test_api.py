"""Volunteer records (api.md 2.5, 4.3, 4.4; decisions.md, Resources)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select

from regdesk.events.models import Event
from regdesk.roles.models import Role, UserRole
from regdesk.volunteers.models import Volunteer
from tests.api.support import (
    assert_not_found,
    headers,
    import_rich,
    iso_now,
    load_small_demo,
    nested,
    parse_timestamp,
    walk,
)
from tests.client import TestClient
from tests.conftest import Apps
from tests.transfer.support import import_

SEARCH = "/api/v0/volunteers/search"
STATES = ["experience", "interest", "avoid", "assignment", "request"]  # api.md 2.5, in order
VOLUNTEER_KEYS = {"createdAt", "updatedAt", "contactMethods", "departments", "user", "options"}
VOLUNTEER_USER_KEYS = {
    "id",
    "firstName",
    "lastName",
    "username",
    "preferredName",
    "phone",
    "email",
    "isStaff",
}


def rich_volunteers(departments: dict[str, int]) -> list[dict[str, Any]]:
    """The rich document's volunteers as api.md 2.5 renders them, less fox's and miyazaki's
    timestamps (the time of the import). Departments in id order, their states in api.md's
    order; options in the order the event defines them (options it did not define come last)."""

    def department(name: str, *states: str) -> dict[str, Any]:
        return {"id": str(departments[name]), "name": name, "states": list(states)}

    return [
        {
            "contactMethods": [
                {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
                {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
            ],
            "departments": [
                department("Security", "experience", "interest"),
                department("Registration", "assignment"),
            ],
            "user": {**nested("fox"), "isStaff": True},  # Staff and Board are staff roles
            "options": [
                {"name": "Shirt size", "type": "select", "value": "L"},
                {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
                {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
                {"name": "Hours", "type": "number", "value": 12},
            ],
        },
        {
            "createdAt": "2026-05-01T10:00:00.000Z",
            "updatedAt": "2026-05-02T11:30:00.250Z",
            "contactMethods": [{"name": "E-mail", "isPrimary": False, "value": "zoe@example.org"}],
            "departments": [department("Art Show", "avoid", "request")],
            "user": {**nested("Zoë"), "isStaff": False},  # Dealer is not a staff role
            "options": [
                {"name": "Shirt size", "type": "select", "value": "M"},
                {"name": "Hours", "type": "number", "value": 7.5},
                {"name": "Pronouns", "type": "text", "value": "she/her"},
            ],
        },
        {
            "contactMethods": [],
            "departments": [],
            "user": {**nested("miyazaki"), "isStaff": False},
            "options": [],
        },
    ]


def test_search_renders_every_field_of_every_volunteer(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    before = iso_now()
    imported = import_rich(engine)
    after = iso_now()
    response = client.post(SEARCH, json={}, headers=headers(apps, "volunteer:read"))
    assert response.status_code == 200, response.text
    page = response.json()
    assert page["nextPage"] is None
    assert page["hasMore"] is False
    records = page["data"]
    for record in records:
        assert set(record) == VOLUNTEER_KEYS, record
        assert set(record["user"]) == VOLUNTEER_USER_KEYS, record["user"]
    expected = rich_volunteers(imported.departments)
    for record, wanted in zip(records, expected, strict=True):
        if "createdAt" not in wanted:  # stamped by the import itself
            created, updated = parse_timestamp(record["createdAt"]), record["updatedAt"]
            assert before <= created <= after, record["createdAt"]
            assert parse_timestamp(updated) == created
            wanted = {"createdAt": record["createdAt"], "updatedAt": updated, **wanted}
        assert record == wanted


def test_a_users_volunteer_record_is_the_one_search_lists(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "volunteer:read")
    listed = client.post(SEARCH, headers=auth).json()["data"]
    assert [record["user"]["username"] for record in listed] == ["fox", "Zoë", "miyazaki"]
    for record in listed:
        user_id = imported.users[record["user"]["username"]]
        response = client.get(f"/api/v0/users/{user_id}/volunteer", headers=auth)
        assert response.status_code == 200, response.text
        assert response.json() == record


def test_a_user_without_a_volunteer_record_is_volunteer_not_found(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    response = client.get(
        f"/api/v0/users/{imported.users['otter']}/volunteer",
        headers=headers(apps, "volunteer:read"),
    )
    assert_not_found(response, "Volunteer not found.")


def test_is_staff_follows_the_staff_roles_the_user_holds(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "volunteer:read user:roles:update")
    user = imported.users["miyazaki"]
    role = f"/api/v0/users/{user}/roles"

    def is_staff() -> bool:
        response = client.get(f"/api/v0/users/{user}/volunteer", headers=auth)
        assert response.status_code == 200, response.text
        staff: bool = response.json()["user"]["isStaff"]
        return staff

    assert is_staff() is False
    assert client.put(f"{role}/{imported.roles['Dealer']}", headers=auth).status_code == 200
    assert is_staff() is False
    assert client.put(f"{role}/{imported.roles['Staff']}", headers=auth).status_code == 200
    assert is_staff() is True
    assert client.delete(f"{role}/{imported.roles['Staff']}", headers=auth).status_code == 204
    assert is_staff() is False
    board = client.put(f"{role}/{imported.roles['Board']}", json={"scope": "global"}, headers=auth)
    assert board.status_code == 200
    assert is_staff() is True


def test_demo_volunteers_are_well_formed_and_staff_exactly_when_holding_a_staff_role(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    load_small_demo(engine, users=120, volunteers=60)
    with engine.connect() as connection:
        staff = {
            str(user_id)
            for user_id in connection.scalars(
                select(UserRole.user_id).join(Role, Role.id == UserRole.role_id).where(Role.staff)
            )
        }
    records = [
        record
        for page in walk(client, SEARCH, headers(apps, "volunteer:read"), {})
        for record in page["data"]
    ]
    assert len(records) == 60
    seen_staff = seen_option_types = 0
    for record in records:
        assert set(record) == VOLUNTEER_KEYS
        assert set(record["user"]) == VOLUNTEER_USER_KEYS
        assert record["user"]["isStaff"] is (record["user"]["id"] in staff)
        seen_staff += record["user"]["isStaff"]
        assert parse_timestamp(record["createdAt"]) <= parse_timestamp(record["updatedAt"])
        assert sum(method["isPrimary"] for method in record["contactMethods"]) <= 1
        for department in record["departments"]:
            assert set(department) == {"id", "name", "states"}
            assert department["id"].isdigit()
            assert department["states"], department
            assert department["states"] == sorted(department["states"], key=STATES.index)
        ids = [int(department["id"]) for department in record["departments"]]
        assert ids == sorted(set(ids))
        for option in record["options"]:
            value = option["value"]
            assert {
                "select": isinstance(value, str),
                "text": isinstance(value, str),
                "multi": isinstance(value, list) and all(isinstance(v, str) for v in value),
                "number": isinstance(value, int | float) and not isinstance(value, bool),
            }[option["type"]], option
        seen_option_types |= len({option["type"] for option in record["options"]}) == 4
    assert seen_staff, "the demo should hold some staff volunteers"
    assert seen_option_types, "the demo should hold a volunteer with every type of option"


def test_only_the_current_events_volunteers_are_listed(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    past = import_rich(engine)  # Fur Con 2026, current
    later = {
        "event": {"name": "Fur Con 2027", "startsOn": "2027-07-01", "endsOn": "2027-07-04",
                  "current": True, "options": []},
        "volunteers": [{"user": "fox", "contactMethods": [{"name": "Signal", "value": "+1 775"}],
                        "departments": [{"name": "Art Show", "states": ["request"]}]}],
    }  # fmt: skip
    import_(engine, later)
    with engine.connect() as connection:
        assert connection.scalars(select(Event.name).where(Event.is_current)).all() == [
            "Fur Con 2027"
        ]
        assert (
            connection.scalar(
                select(Volunteer.id).where(Volunteer.user_id == past.users["miyazaki"])
            )
            is not None
        )
    auth = headers(apps, "volunteer:read")
    page = client.post(SEARCH, json={}, headers=auth).json()
    wanted = {
        "contactMethods": [{"name": "Signal", "isPrimary": False, "value": "+1 775"}],
        "departments": [
            {"id": str(past.departments["Art Show"]), "name": "Art Show", "states": ["request"]}
        ],
        "user": {**nested("fox"), "isStaff": True},
        "options": [],
    }
    [fox] = page["data"]
    assert {key: fox[key] for key in wanted} == wanted
    assert page["nextPage"] is None
    response = client.get(f"/api/v0/users/{past.users['fox']}/volunteer", headers=auth)
    assert response.json() == fox
    for username in ("Zoë", "miyazaki"):  # volunteered for Fur Con 2026 only
        response = client.get(f"/api/v0/users/{past.users[username]}/volunteer", headers=auth)
        assert_not_found(response, "Volunteer not found.")
