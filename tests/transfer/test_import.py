"""Import (operator.md, Import document): canonical values, idempotence, atomicity."""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import Any

from sqlalchemy import Engine, event, func, insert, select

from regdesk.audit.models import AuditEvent
from regdesk.security import verify_password
from regdesk.transfer.exporter import export_document
from regdesk.users.models import User
from tests.transfer.support import (
    FOX_PASSWORD,
    ZOE_PASSWORD,
    import_,
    rich_document,
    table_rows,
)

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def audit_count(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(AuditEvent)).scalar_one()


def by_username(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {user["username"]: user for user in document["users"]}


def test_rich_document_comes_back_canonical(engine: Engine) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    result = import_(engine, rich_document())
    exported = export_document(engine)

    assert result.as_json() == {
        "roles": {"Staff": 1, "Dealer": 2, "Board": 3},
        "users": {"fox": "1", "Zoë": "2", "miyazaki": "3", "otter": "4"},
        "departments": {"Security": "1", "Registration": "2", "Art Show": "3"},
        "volunteers": 3,
        "products": {},
        "registrations": {},
    }
    assert exported["event"] == {
        "name": "Fur Con 2026",
        "startsOn": "2026-07-02",
        "endsOn": "2026-07-05",
        "current": True,
        "options": [
            {"name": "Shirt size", "type": "select", "choices": ["S", "M", "L", "XL"]},
            {"name": "Skills", "type": "multi", "choices": ["First aid", "Driving", "ASL"]},
            {"name": "Notes", "type": "text", "choices": None},
            {"name": "Hours", "type": "number", "choices": None},
            {"name": "Pronouns", "type": "text", "choices": None},  # added by a volunteer
        ],
    }
    assert exported["roles"] == [
        {"id": 1, "name": "Staff", "staff": True},
        {"id": 2, "name": "Dealer", "staff": False},
        {"id": 3, "name": "Board", "staff": True},
    ]
    users = by_username(exported)
    assert list(users) == ["fox", "Zoë", "miyazaki", "otter"]
    fox, zoe, miyazaki, otter = users.values()
    assert verify_password(fox.pop("passwordHash"), FOX_PASSWORD)
    assert verify_password(zoe.pop("passwordHash"), ZOE_PASSWORD)
    for user in (fox, zoe, otter):  # no timestamps in the document: the time of import
        created = user.pop("createdAt")
        assert TIMESTAMP.match(created)
        assert user.pop("updatedAt") == created
        assert dt.datetime.fromisoformat(created) >= before
    assert fox == {
        "id": 1,
        "username": "fox",
        "email": "fox@example.org",
        "firstName": "Fae",
        "lastName": "Fox",
        "preferredName": None,
        "phone": "+17755550123",  # national, read in the address's country
        "verified": True,
        "bornAt": "1990-01-01",
        "newsletter": False,
        "identityVerified": True,
        "profilePictureUrl": None,
        "address": {
            "addressLine1": "1 Main St",
            "addressLine2": None,
            "addressCity": "Reno",
            "addressState": "NV",
            "addressZipcode": "89501",
            "addressCountry": "US",
        },
        "roles": [{"name": "Staff", "scope": "convention"}, {"name": "Board", "scope": "global"}],
        "permissions": ["admin", "volunteer:read"],
    }
    assert zoe == {
        "id": 2,
        "username": "Zoë",
        "email": "zoe@example.org",
        "firstName": "Zoë",
        "lastName": "Łukasiewicz",
        "preferredName": "Zo",
        "phone": "+49301234567",
        "verified": False,
        "bornAt": "1985-03-04",
        "newsletter": True,
        "identityVerified": False,
        "profilePictureUrl": "https://example.org/zoe.png",
        "address": {
            "addressLine1": "Hauptstraße 5",
            "addressLine2": "Hinterhaus, 3. OG",
            "addressCity": "Berlin",
            "addressState": "BE",
            "addressZipcode": "10115",
            "addressCountry": "DE",
        },
        "roles": [{"name": "Dealer", "scope": "convention"}],
        "permissions": ["user:read"],
    }
    assert miyazaki == {
        "id": 3,
        "username": "miyazaki",
        "email": "Hayao.Miyazaki@example.org",
        "firstName": "駿",
        "lastName": "宮崎",
        "preferredName": None,
        "phone": "+81312345678",
        "verified": False,
        "bornAt": None,
        "newsletter": False,
        "identityVerified": False,
        "profilePictureUrl": None,
        "address": None,
        "roles": [],
        "permissions": [],
        "createdAt": "2025-01-02T03:04:05.678Z",
        "updatedAt": "2025-02-03T04:05:06.789Z",
    }
    assert otter == {
        "id": 4,
        "username": "otter",
        "email": "otter@example.org",
        "firstName": "Oli",
        "lastName": "Otter",
        "preferredName": None,
        "phone": None,
        "verified": False,
        "bornAt": None,
        "newsletter": False,
        "identityVerified": False,
        "profilePictureUrl": None,
        "address": None,
        "roles": [],
        "permissions": [],
    }
    assert exported["departments"] == [
        {
            "id": 1,
            "name": "Security",
            "email": "security@example.org",
            "publiclyVisible": True,
            "leads": ["Zoë", "fox"],
        },
        {
            "id": 2,
            "name": "Registration",
            "email": "reg@example.org",
            "publiclyVisible": False,
            "leads": ["miyazaki"],
        },
        {
            "id": 3,
            "name": "Art Show",
            "email": "art@example.org",
            "publiclyVisible": True,
            "leads": [],
        },
    ]
    fox_volunteer, zoe_volunteer, miyazaki_volunteer = exported["volunteers"]
    assert TIMESTAMP.match(fox_volunteer.pop("createdAt"))
    assert TIMESTAMP.match(fox_volunteer.pop("updatedAt"))
    assert fox_volunteer == {
        "user": "fox",
        "contactMethods": [
            {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
            {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
        ],
        "departments": [
            {"name": "Security", "states": ["experience", "interest"]},
            {"name": "Registration", "states": ["assignment"]},
        ],
        "options": [  # in the event's order
            {"name": "Shirt size", "type": "select", "value": "L"},
            {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
            {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
            {"name": "Hours", "type": "number", "value": 12},
        ],
    }
    assert zoe_volunteer == {
        "user": "Zoë",
        "contactMethods": [{"name": "E-mail", "isPrimary": False, "value": "zoe@example.org"}],
        "departments": [{"name": "Art Show", "states": ["avoid", "request"]}],
        "options": [
            {"name": "Shirt size", "type": "select", "value": "M"},
            {"name": "Hours", "type": "number", "value": 7.5},
            {"name": "Pronouns", "type": "text", "value": "she/her"},
        ],
        "createdAt": "2026-05-01T10:00:00.000Z",
        "updatedAt": "2026-05-02T11:30:00.250Z",
    }
    assert miyazaki_volunteer["user"] == "miyazaki"
    assert miyazaki_volunteer["contactMethods"] == miyazaki_volunteer["departments"] == []


def test_reimport_changes_nothing_but_the_audit_log(engine: Engine) -> None:
    import_(engine, rich_document())
    exported = export_document(engine)
    rows = table_rows(engine)
    audits = audit_count(engine)

    again = import_(engine, rich_document())
    from_export = import_(engine, exported)

    assert export_document(engine) == exported
    after = table_rows(engine)
    assert after.pop("audit_events") != rows.pop("audit_events")
    assert after == rows  # every row, updated_at and password hashes included
    assert audit_count(engine) == audits + 2
    for result in (again, from_export):
        assert "0 created, 0 updated" in result.summary()
        assert all(t.created == t.updated == 0 for t in result.tallies.values())


def test_the_audit_event_counts_without_secrets(engine: Engine) -> None:
    import_(engine, rich_document())
    with engine.connect() as connection:
        event = connection.execute(select(AuditEvent)).one()
    assert event.action == "data.imported"
    assert event.actor == "test:transfer"
    assert event.details["users"] == {"created": 4, "updated": 0, "unchanged": 0}
    assert event.details["volunteers"] == {"created": 3, "updated": 0, "unchanged": 0}
    assert FOX_PASSWORD not in str(event.details)
    assert "argon2" not in str(event.details)


def test_a_change_updates_that_record_only_and_keeps_absent_fields(engine: Engine) -> None:
    import_(engine, rich_document())
    before = by_username(export_document(engine))

    result = import_(
        engine,
        {
            "users": [
                {"username": "FOX", "firstName": "Faye", "roles": ["Dealer"]},
                {"username": "otter", "lastName": "Otter"},
            ]
        },
    )

    after = by_username(export_document(engine))
    assert result.tallies["users"].updated == 1
    assert result.tallies["users"].unchanged == 1
    assert result.as_json()["users"] == {"FOX": "1", "otter": "4"}
    fox = after.pop("FOX")  # the document's spelling of a username is kept
    old_fox = before.pop("fox")
    assert fox["firstName"] == "Faye"
    assert fox["roles"] == [{"name": "Dealer", "scope": "convention"}]  # a given list replaces
    assert fox["updatedAt"] > old_fox["updatedAt"]
    changed = {"username", "firstName", "roles", "updatedAt"}
    assert {k: v for k, v in fox.items() if k not in changed} == {
        k: v for k, v in old_fox.items() if k not in changed
    }
    assert after == before


def test_a_volunteer_list_given_replaces_the_stored_one(engine: Engine) -> None:
    import_(engine, rich_document())
    import_(
        engine,
        {
            "volunteers": [
                {
                    "user": "fox",
                    "contactMethods": [{"name": "Signal", "isPrimary": True, "value": "+1555"}],
                    "departments": [{"name": "Security", "states": ["assignment"]}],
                }
            ]
        },
    )
    fox = export_document(engine)["volunteers"][0]
    assert fox["contactMethods"] == [{"name": "Signal", "isPrimary": True, "value": "+1555"}]
    assert fox["departments"] == [{"name": "Security", "states": ["assignment"]}]
    assert [o["name"] for o in fox["options"]] == ["Shirt size", "Skills", "Notes", "Hours"]


def test_a_password_is_rehashed_only_when_it_changes(engine: Engine) -> None:
    document = rich_document()
    import_(engine, document)
    stored = by_username(export_document(engine))["fox"]["passwordHash"]

    import_(engine, {"users": [{"username": "fox", "password": FOX_PASSWORD}]})
    assert by_username(export_document(engine))["fox"]["passwordHash"] == stored

    import_(engine, {"users": [{"username": "fox", "password": "a new one, long and mine"}]})
    changed = by_username(export_document(engine))["fox"]["passwordHash"]
    assert changed != stored
    assert verify_password(changed, "a new one, long and mine")


def test_explicit_ids_are_kept_and_later_rows_come_after_them(engine: Engine) -> None:
    result = import_(
        engine,
        {
            "roles": [{"id": 40, "name": "Staff"}, {"name": "Dealer"}],
            "users": [
                {
                    "id": "17",
                    "username": "fox",
                    "email": "f@example.org",
                    "firstName": "F",
                    "lastName": "F",
                },
                {"username": "otter", "email": "o@example.org", "firstName": "O", "lastName": "O"},
            ],
            "departments": [{"id": 9, "name": "Security", "email": "s@example.org"}],
        },
    )
    assert result.as_json()["roles"] == {"Staff": 40, "Dealer": 41}
    assert result.as_json()["users"] == {"fox": "17", "otter": "18"}
    assert result.as_json()["departments"] == {"Security": "9"}
    with engine.begin() as connection:  # the sequence, too, moved past the explicit ids
        connection.execute(
            insert(User).values(
                username="new", email="n@example.org", first_name="N", last_name="N"
            )
        )
        assert connection.execute(select(func.max(User.id))).scalar_one() == 19


def test_volunteers_without_an_event_join_the_current_one(engine: Engine) -> None:
    users = rich_document()["users"][2:]
    import_(engine, {"users": users, "volunteers": [{"user": "otter"}]})
    assert export_document(engine)["event"]["name"] == "Current event"

    import_(
        engine,
        {"event": {"name": "Next year", "current": False}, "volunteers": [{"user": "miyazaki"}]},
    )
    exported = export_document(engine)
    assert exported["event"]["name"] == "Current event"  # only `current` moves it
    assert [v["user"] for v in exported["volunteers"]] == ["otter"]

    import_(engine, {"event": {"name": "Next year", "current": True}})
    exported = export_document(engine)
    assert exported["event"]["name"] == "Next year"
    assert [v["user"] for v in exported["volunteers"]] == ["miyazaki"]


def test_ten_thousand_users_import_in_a_few_bulk_statements(engine: Engine) -> None:
    users = [
        {"username": f"user{i}", "email": f"user{i}@example.org", "firstName": "Ann",
         "lastName": f"Lee {i}", "roles": ["Staff"], "permissions": ["user:read"] if i % 2 else []}
        for i in range(10_000)
    ]  # fmt: skip
    volunteers = [{"user": f"user{i}", "contactMethods": [{"name": "Discord", "value": f"u{i}"}]}
                  for i in range(0, 10_000, 5)]  # fmt: skip
    statements = 0

    def count(*_: object) -> None:
        nonlocal statements
        statements += 1

    event.listen(engine, "before_cursor_execute", count)
    started = time.monotonic()
    result = import_(
        engine, {"roles": [{"name": "Staff"}], "users": users, "volunteers": volunteers}
    )
    elapsed = time.monotonic() - started
    event.remove(engine, "before_cursor_execute", count)

    assert result.tallies["users"].created == 10_000
    assert statements < 100  # a bulk statement per kind of row (and batch), never one per row
    assert elapsed < 30  # seconds, not minutes (about 3 s on a laptop)


def test_a_list_change_alone_is_an_update_and_moves_updated_at(engine: Engine) -> None:
    import_(engine, rich_document())
    before = export_document(engine)

    result = import_(
        engine,
        {
            "users": [{"username": "otter", "permissions": ["admin"]}],
            "departments": [{"name": "Art Show", "leads": ["otter"]}],
            "volunteers": [
                {"user": "miyazaki", "departments": [{"name": "Security", "states": ["request"]}]}
            ],
        },
    )

    after = export_document(engine)
    updated = {
        kind: result.tallies[kind].updated for kind in ("users", "departments", "volunteers")
    }
    assert updated == {"users": 1, "departments": 1, "volunteers": 1}
    assert by_username(after)["otter"]["updatedAt"] > by_username(before)["otter"]["updatedAt"]
    assert after["volunteers"][2]["updatedAt"] > before["volunteers"][2]["updatedAt"]


def test_an_updated_at_in_the_document_is_kept(engine: Engine) -> None:
    import_(engine, rich_document())
    stamp = "2020-01-01T00:00:00.000Z"
    import_(engine, {"users": [{"username": "otter", "roles": ["Staff"], "updatedAt": stamp}]})
    otter = by_username(export_document(engine))["otter"]
    assert otter["roles"] == [{"name": "Staff", "scope": "convention"}]
    assert otter["updatedAt"] == stamp
