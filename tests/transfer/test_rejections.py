"""A bad document is refused with each bad field named, and nothing at all is written.

The cases share one database per backend, seeded with the rich document: a refused import
must leave it as it was, which each case checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine

from regdesk.transfer.exporter import export_document
from regdesk.transfer.importer import ImportRejected
from tests.conftest import BACKENDS
from tests.transfer.support import empty_database, import_, rich_document, table_rows

Mutation = Callable[[dict[str, Any]], None]


def put(*path: Any) -> Mutation:
    """Sets document[path...] = value (the last argument)."""
    *steps, key, value = path

    def mutate(document: dict[str, Any]) -> None:
        target = document
        for step in steps:
            target = target[step]
        target[key] = value

    return mutate


def add(section: str, record: Any) -> Mutation:
    return lambda document: document[section].append(record)


def only(document: dict[str, Any]) -> Mutation:
    """Replaces the rich document with a small one."""

    def mutate(rich: dict[str, Any]) -> None:
        rich.clear()
        rich.update(document)

    return mutate


def new_user(**fields: Any) -> dict[str, Any]:
    """A valid new user, with `fields` changed (or dropped when given as ...)."""
    user = {"username": "new", "email": "new@example.org", "firstName": "N", "lastName": "N"}
    user.update(fields)
    return {key: value for key, value in user.items() if value is not ...}


@dataclass(frozen=True)
class Case:
    name: str
    mutate: Mutation
    position: str
    message: str  # a part of the message


CASES = [
    Case(
        "bad e-mail",
        put("users", 1, "email", "zoe at example.org"),
        "users[1].email",
        "not a valid e-mail address",
    ),
    Case(
        "e-mail twice, other case",
        put("users", 3, "email", "FOX@example.org"),
        "users[3].email",
        "also in users[0]",
    ),
    Case(
        "e-mail of a stored user",
        only({"users": [new_user(email="OTTER@example.org")]}),
        "users[0].email",
        "already the e-mail of user 'otter'",
    ),
    Case("bad phone", put("users", 0, "phone", "12"), "users[0].phone", "phone number"),
    Case(
        "bad country",
        put("users", 0, "address", {"addressCountry": "XX"}),
        "users[0].address.addressCountry",
        "ISO 3166-1",
    ),
    Case(
        "unknown address field",
        put("users", 0, "address", {"street": "x"}),
        "users[0].address.street",
        "unknown field",
    ),
    Case(
        "bad state",
        put("volunteers", 0, "departments", 1, "states", 0, "eager"),
        "volunteers[0].departments[1].states[0]",
        "'eager' is not one of",
    ),
    Case(
        "state twice",
        put("volunteers", 0, "departments", 1, "states", ["avoid", "avoid"]),
        "volunteers[0].departments[1].states[1]",
        "listed twice",
    ),
    Case(
        "no states",
        put("volunteers", 0, "departments", 0, "states", []),
        "volunteers[0].departments[0].states",
        "at least one",
    ),
    Case(
        "bad option type",
        put("volunteers", 0, "options", 0, "type", "colour"),
        "volunteers[0].options[0].type",
        "'colour' is not one of",
    ),
    Case(
        "number option given a string",
        put("volunteers", 0, "options", 0, "value", "12"),
        "volunteers[0].options[0].value",
        "must be a number",
    ),
    Case(
        "select value not a choice",
        put("volunteers", 0, "options", 1, "value", "XXL"),
        "volunteers[0].options[1].value",
        "'XXL' is not one of the choices",
    ),
    Case(
        "multi value not a choice",
        put("volunteers", 0, "options", 2, "value", ["Juggling"]),
        "volunteers[0].options[2].value",
        "'Juggling' is not one of the choices",
    ),
    Case(
        "option of another type",
        put("volunteers", 0, "options", 1, "type", "text"),
        "volunteers[0].options[1].type",
        "'Shirt size' is 'select'",
    ),
    Case(
        "event option of another type",
        put("event", "options", 0, "type", "multi"),
        "event.options[0].type",
        "'Shirt size' is 'select'",
    ),
    Case(
        "choices on a text option",
        put("event", "options", 2, "choices", ["a"]),
        "event.options[2].choices",
        "only select and multi",
    ),
    Case(
        "event ends before it starts",
        put("event", "endsOn", "2026-07-01"),
        "event.endsOn",
        "before startsOn",
    ),
    Case(
        "bad role scope",
        put("users", 0, "roles", 1, "scope", "galactic"),
        "users[0].roles[1].scope",
        "'galactic' is not one of",
    ),
    Case(
        "unknown role",
        put("users", 1, "roles", ["Wizard"]),
        "users[1].roles[0]",
        "no role is named 'Wizard'",
    ),
    Case(
        "bad permission",
        put("users", 0, "permissions", ["volunteer:write"]),
        "users[0].permissions[0]",
        "not a permission",
    ),
    Case(
        "unknown lead",
        put("departments", 0, "leads", 1, "nobody"),
        "departments[0].leads[1]",
        "no user is named 'nobody'",
    ),
    Case(
        "unknown volunteer user",
        put("volunteers", 1, "user", "ghost"),
        "volunteers[1].user",
        "no user is named 'ghost'",
    ),
    Case(
        "unknown department",
        put("volunteers", 0, "departments", 0, "name", "Catering"),
        "volunteers[0].departments[0].name",
        "no department is named 'Catering'",
    ),
    Case(
        "unknown field",
        put("users", 2, "emial", "x@example.org"),
        "users[2].emial",
        "unknown field",
    ),
    Case("unknown section", put("people", []), "people", "unknown section"),
    Case(
        "missing last name",
        add("users", new_user(lastName=...)),
        "users[4].lastName",
        "is required",
    ),
    Case(
        "missing department e-mail",
        add("departments", {"name": "Catering"}),
        "departments[3].email",
        "is required",
    ),
    Case(
        "missing volunteer user",
        add("volunteers", {"contactMethods": []}),
        "volunteers[3].user",
        "is required",
    ),
    Case(
        "string for a boolean",
        put("users", 0, "verified", "yes"),
        "users[0].verified",
        "must be true or false, not a string",
    ),
    Case(
        "number for a string",
        put("users", 0, "firstName", 42),
        "users[0].firstName",
        "must be a string, not a number",
    ),
    Case("null e-mail", put("users", 0, "email", None), "users[0].email", "may not be null"),
    Case("object for a section", put("users", {}), "users", "must be an array, not an object"),
    Case("string for a record", put("users", 0, "fox"), "users[0]", "must be an object"),
    Case(
        "name too long",
        put("users", 0, "firstName", "x" * 101),
        "users[0].firstName",
        "longer than 100",
    ),
    Case(
        "bad username", add("users", new_user(username="otter pup")), "users[4].username", "spaces"
    ),
    Case(
        "bad birth date", put("users", 0, "bornAt", "1990-02-30"), "users[0].bornAt", "not a date"
    ),
    Case(
        "birth time not midnight",
        put("users", 0, "bornAt", "1990-01-01T12:00:00Z"),
        "users[0].bornAt",
        "midnight UTC",
    ),
    Case(
        "timestamp without zone",
        put("users", 2, "createdAt", "2025-01-02T03:04:05"),
        "users[2].createdAt",
        "no time zone",
    ),
    Case(
        "bad password hash",
        put("users", 1, "passwordHash", "hunter2"),
        "users[1].passwordHash",
        "argon2",
    ),
    Case(
        "password and hash", put("users", 1, "password", "hunter2"), "users[1].password", "not both"
    ),
    Case(
        "username twice, other case",
        put("users", 3, "username", "FOX"),
        "users[3].username",
        "also in users[0]",
    ),
    Case("role twice", add("roles", {"name": "Staff"}), "roles[3].name", "also in roles[0]"),
    Case(
        "department twice",
        add("departments", {"name": "Security", "email": "s@example.org"}),
        "departments[3].name",
        "also in departments[0]",
    ),
    Case(
        "volunteer twice",
        add("volunteers", {"user": "FOX"}),
        "volunteers[3].user",
        "also in volunteers[0]",
    ),
    Case("user id taken", add("users", new_user(id=2)), "users[4].id", "taken by user 'Zoë'"),
    Case(
        "role id taken",
        add("roles", {"id": 1, "name": "Crew"}),
        "roles[3].id",
        "taken by role 'Staff'",
    ),
    Case(
        "department id taken",
        add("departments", {"id": 3, "name": "Ops", "email": "o@x.org"}),
        "departments[3].id",
        "taken by department 'Art Show'",
    ),
    Case(
        "matched user with another id", put("users", 0, "id", 99), "users[0].id", "already has id 1"
    ),
    Case("id not a number", put("users", 0, "id", "one"), "users[0].id", "positive integer"),
]


@pytest.fixture(
    scope="module",
    params=BACKENDS,
)
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    with empty_database(request.param, tmp_path_factory.mktemp("seeded")) as engine:
        import_(engine, rich_document())
        yield engine


def rejected(engine: Engine, document: Any) -> list[tuple[str, str]]:
    """The errors of an import that must fail, after checking that it wrote nothing."""
    rows, exported = table_rows(engine), export_document(engine)
    with pytest.raises(ImportRejected) as caught:
        import_(engine, document)
    assert table_rows(engine) == rows
    assert export_document(engine) == exported
    return caught.value.errors


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_bad_record_is_refused_by_position_and_field(seeded: Engine, case: Case) -> None:
    document = rich_document()
    case.mutate(document)
    errors = rejected(seeded, document)
    assert any(p == case.position and case.message in m for p, m in errors), errors


def test_good_records_before_a_bad_one_are_not_written(seeded: Engine) -> None:
    document = {
        "roles": [{"name": "Crew"}],
        "users": [new_user(roles=["Crew"]), new_user(username="bad", email="nope")],
        "departments": [{"name": "Ops", "email": "ops@example.org", "leads": ["new"]}],
    }
    assert [position for position, _ in rejected(seeded, document)] == ["users[1].email"]


def test_every_bad_field_is_reported(seeded: Engine) -> None:
    document = rich_document()
    document["users"][0]["phone"] = "12"
    document["users"][3]["verified"] = 1
    document["volunteers"][2]["user"] = "ghost"
    positions = [position for position, _ in rejected(seeded, document)]
    assert positions == ["users[0].phone", "users[3].verified", "volunteers[2].user"]


def test_errors_are_capped_and_listed_one_per_line(seeded: Engine) -> None:
    users = [new_user(username=f"u{i}", email=f"bad{i}") for i in range(150)]
    with pytest.raises(ImportRejected) as caught:
        import_(seeded, {"users": users})
    errors = caught.value.errors
    assert len(errors) == 101
    assert errors[0][0] == "users[0].email"
    assert errors[-1] == ("document", "and 50 more errors not shown")
    lines = str(caught.value).splitlines()
    assert len(lines) == 101
    assert lines[0].startswith("users[0].email: 'bad0' is not a valid e-mail address")


def test_a_document_that_is_not_an_object_is_refused(seeded: Engine) -> None:
    assert rejected(seeded, ["users"]) == [("document", "must be a JSON object, not an array")]
