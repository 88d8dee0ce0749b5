"""The current event's options (/admin/options, admin/options.py): the questions of the
volunteer form, which administrators define, on both databases. What the form then asks, and
what volunteers answered, is checked on the form and through the API (api.md 2.5)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import Engine

from tests.admin.support import People
from tests.conftest import Apps
from tests.volunteers.support import Event, api_record, field_error, make_event
from tests.web.support import audit


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    return make_event(engine, people)


def option_fields(name: str, kind: str, choices: str = "", position: str = "") -> dict[str, str]:
    return {"name": name, "type": kind, "choices": choices, "position": position}


def test_an_admin_adds_changes_and_deletes_an_option(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ada = people.admin
    made = ada.post("/admin/options/new", option_fields("Diet", "select", "None\r\nVegan\r\n\r\n"))
    assert made.status_code == 303
    assert made.headers["location"] == "/admin/options?done=created"
    listing = ada.get("/admin/options?done=created")
    assert "The option was added to the volunteer form." in listing.text
    match = re.search(r'<a href="/admin/options/(\d+)">Diet</a>', listing.text)
    assert match is not None
    diet = int(match.group(1))
    # Asked last, with its choices, on the volunteer form.
    form = people.attendee.get("/volunteer").text
    assert form.index("Hours") < form.index("Diet")
    assert f'id="option-{diet}-1"' in form
    assert 'value="Vegan"' in form
    assert people.attendee.post("/volunteer", {f"option-{diet}": "Vegan"}).status_code == 303
    assert api_record(apps, people.attendee.user_id)["options"] == [
        {"name": "Diet", "type": "select", "value": "Vegan"}
    ]

    renamed = ada.post(f"/admin/options/{diet}", option_fields("Food", "select", "Vegan", "5"))
    assert renamed.status_code == 303
    assert api_record(apps, people.attendee.user_id)["options"] == [
        {"name": "Food", "type": "select", "value": "Vegan"}
    ]
    form = people.attendee.get("/volunteer").text
    assert form.index("Food") < form.index("Shirt size")  # 5 comes before 10, 20...
    (updated,) = audit(engine, "event_option.updated")
    assert updated.details == {"changed": ["choices", "name", "position"]}

    confirm = ada.get(f"/admin/options/{diet}/delete")
    assert confirm.status_code == 200
    assert "The 1 answer volunteers gave to it" in confirm.text
    assert ada.post(f"/admin/options/{diet}/delete").status_code == 303
    assert api_record(apps, people.attendee.user_id)["options"] == []
    assert "Food" not in people.attendee.get("/volunteer").text
    assert ada.get(f"/admin/options/{diet}").status_code == 404
    (deleted,) = audit(engine, "event_option.deleted")
    assert deleted.details == {"name": "Food", "answers": 1}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (option_fields("  ", "text"), "name", "The name may not be empty."),
        (option_fields("Hours", "number"), "name", "already has an option named 'Hours'"),
        (option_fields("x" * 201, "text"), "name", "longer than 200"),
        (option_fields("Diet", "colour"), "type", "Choose one of select"),
        (option_fields("Diet", "select", " \n "), "choices", "at least one choice"),
        (option_fields("Diet", "multi", "A\nB\nA"), "choices", "'A' is listed twice"),
        (option_fields("Diet", "text", "A"), "choices", "Only select and multi"),
        (option_fields("Diet", "text", "", "-1"), "position", "whole number from 0"),
        (option_fields("Diet", "text", "", "10001"), "position", "whole number from 0"),
        (option_fields("Diet", "text", "", "9" * 5000), "position", "whole number from 0"),
    ],
)
def test_an_option_that_does_not_make_sense_is_refused(
    people: People, event: Event, fields: dict[str, str], field: str, message: str
) -> None:
    refused = people.admin.post("/admin/options/new", fields)
    assert refused.status_code == 400
    assert message in field_error(refused.text, field)
    assert f'href="#{field}"' in refused.text
    assert (
        len(re.findall(r'<a href="/admin/options/\d+">', people.admin.get("/admin/options").text))
        == 4
    )


def test_an_answered_option_keeps_its_type(people: People, event: Event, apps: Apps) -> None:
    hours, notes = event.options["Hours"], event.options["Notes"]
    people.attendee.post("/volunteer", {f"option-{hours}": "12"})
    refused = people.admin.post(f"/admin/options/{hours}", option_fields("Hours", "text"))
    assert refused.status_code == 400
    assert "type cannot change" in field_error(refused.text, "type")
    assert api_record(apps, people.attendee.user_id)["options"][0]["type"] == "number"
    # An option nobody answered may change type.
    changed = people.admin.post(f"/admin/options/{notes}", option_fields("Notes", "number"))
    assert changed.status_code == 303


def test_event_options_are_for_administrators_only(people: People, event: Event) -> None:
    hours = event.options["Hours"]
    for lead in (people.security_lead, people.hotel_lead):
        assert lead.get("/admin/options").status_code == 403
        assert lead.post("/admin/options/new", option_fields("Diet", "text")).status_code == 403
        assert lead.post(f"/admin/options/{hours}/delete").status_code == 403
        assert 'href="/admin/options"' not in lead.get("/admin").text
    assert 'href="/admin/options"' in people.admin.get("/admin").text
    assert people.admin.get(f"/admin/options/{hours}").status_code == 200
