"""The volunteer application form (/volunteer, web/volunteering.py): apply, and edit later,
on both databases. What a volunteer sends is checked through the API (api.md 2.5)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.db import write_session
from regdesk.events.models import EventOption
from tests.admin.support import People, person, seed_people
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.volunteers.support import (
    Event,
    api_record,
    contact,
    expected_record,
    field_error,
    full_form,
    is_checked,
    make_event,
    volunteer_count,
    volunteer_id,
    without_times,
)
from tests.web.support import audit


@pytest.fixture
def people(engine: Engine, app: FastAPI, client: TestClient) -> People:
    """The people of the admin area (tests/admin/conftest.py's): the attendee applies, the
    lead of "Security" sets states on the application."""
    return seed_people(engine, app, client)


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    return make_event(engine, people)


def test_a_signed_out_visitor_is_sent_to_log_in_and_back(
    client: TestClient, engine: Engine, event: Event
) -> None:
    page = client.get("/volunteer", follow_redirects=False)
    assert page.status_code == 303
    assert unquote(page.headers["location"]) == "/login?next=/volunteer"
    sent = client.post("/volunteer", data=full_form(event), follow_redirects=False)
    assert sent.status_code == 303
    assert sent.headers["location"].startswith("/login?")
    assert volunteer_count(engine) == 0


def test_an_attendee_applies_and_the_api_shows_it_as_api_md_does(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ann = people.attendee
    assert api_record(apps, ann.user_id) == 404
    form = ann.get("/volunteer")
    assert form.status_code == 200
    assert "Send application" in form.text
    # Publicly visible departments only; the hidden one is not offered.
    assert "Security" in form.text
    assert "Registration" in form.text
    assert "Backstage" not in form.text

    sent = ann.post("/volunteer", full_form(event))
    assert sent.status_code == 303
    assert sent.headers["location"] == "/volunteer?saved"
    record = api_record(apps, ann.user_id)
    assert without_times(record) == expected_record(event, ann)
    assert record["createdAt"] == record["updatedAt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["createdAt"])
    # The same record in the volunteer search.
    search = apps.client.post(
        "/api/v0/volunteers/search",
        json={},
        headers=bearer(apps.service_token("volunteer:read")),
    ).json()
    assert search["data"] == [record]
    (applied,) = audit(engine, "volunteer.applied")
    assert applied.actor == f"user:{ann.user_id}"
    assert applied.details == {
        "user": ann.user_id,
        "changed": ["contactMethods", "departments", "options"],
    }


def test_the_form_shows_the_application_and_saves_changes_to_it(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ann, o, d = people.attendee, event.options, event.departments
    ann.post("/volunteer", full_form(event))
    page = ann.get("/volunteer?saved")
    assert "Your application was saved." in page.text
    assert "Save changes" in page.text
    for value in ("fox#1234", "@fae_fox", "Can lift 20 kg"):
        assert f'value="{value}"' in page.text
    assert is_checked(page.text, "contact-0-primary")
    assert not is_checked(page.text, "contact-1-primary")
    # The two filled rows, then two empty ones to add more.
    assert 'id="contact-3-name"' in page.text
    assert 'id="contact-4-name"' not in page.text
    assert is_checked(page.text, f"department-{d['Security']}-interest")
    assert is_checked(page.text, f"department-{d['Hotel']}-avoid")
    assert not is_checked(page.text, f"department-{d['Hotel']}-interest")
    assert is_checked(page.text, f"option-{o['Shirt size']}-2")  # L
    assert is_checked(page.text, f"option-{o['Skills']}-1")  # Driving
    assert not is_checked(page.text, f"option-{o['Skills']}-2")
    assert re.search(rf'id="option-{o["Hours"]}"[^>]*value="12"', page.text)

    changed = {
        **contact(0, "Telegram", "@fae_fox", primary=True),
        **contact(1, "", ""),
        f"department-{d['Hotel']}": ["interest"],
        f"option-{o['Shirt size']}": "",  # "No answer"
        f"option-{o['Hours']}": "7.5",
    }
    assert ann.post("/volunteer", changed).status_code == 303
    record = api_record(apps, ann.user_id)
    assert record["contactMethods"] == [
        {"name": "Telegram", "isPrimary": True, "value": "@fae_fox"}
    ]
    assert record["departments"] == [
        {"id": str(d["Hotel"]), "name": "Hotel", "states": ["interest"]}
    ]
    assert record["options"] == [{"name": "Hours", "type": "number", "value": 7.5}]
    assert record["updatedAt"] > record["createdAt"]
    assert volunteer_count(engine) == 1
    (change,) = audit(engine, "volunteer.application_changed")
    assert change.details["changed"] == ["contactMethods", "departments", "options"]


def test_blank_contact_rows_are_ignored_and_half_filled_ones_refused(
    people: People, event: Event, apps: Apps
) -> None:
    ann = people.attendee
    rows = {**contact(0, " ", ""), **contact(1, "Phone", "+1 555 0100"), **contact(2, "", "  ")}
    assert ann.post("/volunteer", rows).status_code == 303
    assert api_record(apps, ann.user_id)["contactMethods"] == [
        {"name": "Phone", "isPrimary": False, "value": "+1 555 0100"}
    ]
    half = ann.post("/volunteer", {**contact(0, "Discord", ""), **contact(1, "", "@owl")})
    assert half.status_code == 400
    assert field_error(half.text, "contact-0-value") == "Enter how to reach you there."
    assert field_error(half.text, "contact-1-name").startswith("Enter a name")
    assert 'value="Discord"' in half.text
    assert 'value="@owl"' in half.text
    two_preferred = ann.post(
        "/volunteer", {**contact(0, "A", "1", primary=True), **contact(1, "B", "2", primary=True)}
    )
    assert two_preferred.status_code == 400
    assert "only one" in field_error(two_preferred.text, "contact")
    assert api_record(apps, ann.user_id)["contactMethods"][0]["name"] == "Phone"


def test_an_unknown_option_value_is_refused(people: People, event: Event, apps: Apps) -> None:
    ann, o = people.attendee, event.options
    form = {**full_form(event), f"option-{o['Shirt size']}": "XXL"}
    refused = ann.post("/volunteer", form)
    assert refused.status_code == 400
    assert "Your application was not saved" in refused.text
    assert (
        field_error(refused.text, f"option-{o['Shirt size']}") == "Choose among the choices given."
    )
    assert f'href="#option-{o["Shirt size"]}"' in refused.text  # the summary links to it
    assert 'value="Can lift 20 kg"' in refused.text  # the rest is kept
    many = ann.post("/volunteer", {f"option-{o['Skills']}": ["First aid", "Juggling"]})
    assert many.status_code == 400
    assert field_error(many.text, f"option-{o['Skills']}") == "Choose among the choices given."
    two = ann.post("/volunteer", {f"option-{o['Shirt size']}": ["S", "M"]})
    assert two.status_code == 400
    assert api_record(apps, ann.user_id) == 404


@pytest.mark.parametrize("typed", ["twelve", "1,5", "nan", "inf", "1e400", "9" * 41])
def test_a_number_option_refuses_what_is_not_a_number(
    people: People, event: Event, apps: Apps, typed: str
) -> None:
    hours = event.options["Hours"]
    refused = people.attendee.post("/volunteer", {f"option-{hours}": typed})
    assert refused.status_code == 400
    assert field_error(refused.text, f"option-{hours}").startswith("Enter a number")
    assert api_record(apps, people.attendee.user_id) == 404


def test_numbers_keep_their_type(people: People, event: Event, apps: Apps) -> None:
    hours = event.options["Hours"]
    for typed, value in (("12", 12), ("7.50", 7.5), ("-3", -3), ("2.0", 2), ("1e3", 1000)):
        assert people.attendee.post("/volunteer", {f"option-{hours}": typed}).status_code == 303
        options = api_record(apps, people.attendee.user_id)["options"]
        assert options == [{"name": "Hours", "type": "number", "value": value}]
        assert type(options[0]["value"]) is type(value)


def test_a_too_long_text_is_refused(people: People, event: Event, apps: Apps) -> None:
    notes = event.options["Notes"]
    refused = people.attendee.post("/volunteer", {f"option-{notes}": "x" * 1001})
    assert refused.status_code == 400
    assert "at most 1000 characters" in field_error(refused.text, f"option-{notes}")
    long_contact = people.attendee.post("/volunteer", contact(0, "Discord", "y" * 501))
    assert long_contact.status_code == 400
    assert "longer than 500" in field_error(long_contact.text, "contact-0-value")
    assert api_record(apps, people.attendee.user_id) == 404
    fits = people.attendee.post("/volunteer", {f"option-{notes}": "x" * 1000})
    assert fits.status_code == 303


def test_the_form_cannot_set_the_states_leads_set(people: People, event: Event, apps: Apps) -> None:
    security = event.departments["Security"]
    for states in (["assignment"], ["interest", "request"], ["bogus"]):
        refused = people.attendee.post("/volunteer", {f"department-{security}": states})
        assert refused.status_code == 400
        assert "interest, experience and avoid" in field_error(
            refused.text, f"department-{security}"
        )
    both = people.attendee.post("/volunteer", {f"department-{security}": ["interest", "avoid"]})
    assert both.status_code == 400
    assert "not both" in field_error(both.text, f"department-{security}")
    assert api_record(apps, people.attendee.user_id) == 404


def test_a_hidden_department_cannot_be_chosen(people: People, event: Event, apps: Apps) -> None:
    backstage, hotel = event.departments["Backstage"], event.departments["Hotel"]
    sent = people.attendee.post(
        "/volunteer", {f"department-{backstage}": ["interest"], f"department-{hotel}": "interest"}
    )
    assert sent.status_code == 303
    assert [d["name"] for d in api_record(apps, people.attendee.user_id)["departments"]] == [
        "Hotel"
    ]


def test_a_lead_set_assignment_survives_the_attendee_editing_their_form(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ann, d = people.attendee, event.departments
    ann.post("/volunteer", {f"department-{d['Security']}": ["interest"]})
    application = volunteer_id(engine, ann.user_id)
    set_by_lead = people.security_lead.post(
        f"/admin/volunteers/{application}/departments/{d['Security']}",
        {"states": ["interest", "assignment"]},
    )
    assert set_by_lead.status_code == 303
    # The attendee changes their mind: no longer interested in Security, but in Hotel.
    page = ann.get("/volunteer")
    assert not is_checked(page.text, f"department-{d['Security']}-avoid")
    assert "assignment" not in page.text
    assert ann.post("/volunteer", {f"department-{d['Hotel']}": ["interest"]}).status_code == 303
    assert api_record(apps, ann.user_id)["departments"] == [
        {"id": str(d["Security"]), "name": "Security", "states": ["assignment"]},
        {"id": str(d["Hotel"]), "name": "Hotel", "states": ["interest"]},
    ]


def test_without_any_event_the_form_still_works(
    engine: Engine, app: Any, client: TestClient, apps: Apps
) -> None:
    """No current event yet (a fresh install): applying makes it, as an import would."""
    fox = person(app, engine, "fox")
    page = fox.get("/volunteer")
    assert page.status_code == 200
    assert "No department is taking applications yet." in page.text
    assert fox.post("/volunteer", contact(0, "Discord", "fox")).status_code == 303
    assert api_record(apps, fox.user_id)["contactMethods"] == [
        {"name": "Discord", "isPrimary": False, "value": "fox"}
    ]


def test_long_lists_are_drop_downs_and_open_questions_take_any_answer(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    """A select of more than five choices is a drop-down list; a select or multi imported
    without choices (any value accepted) is a text box, one answer per line for a multi."""
    with write_session(engine) as session:
        hours = session.get(EventOption, event.options["Hours"])
        assert hours is not None
        event_id = hours.event_id
        made = {
            name: EventOption(
                event_id=event_id, name=name, type=kind, choices=choices, position=100 + n
            )
            for n, (name, kind, choices) in enumerate(
                (
                    ("Arrival day", "select", ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]),
                    ("Pronouns", "select", None),
                    ("Languages", "multi", None),
                )
            )
        }
        session.add_all(made.values())
        session.flush()
        ids = {name: option.id for name, option in made.items()}
    page = people.attendee.get("/volunteer").text
    assert f'<select id="option-{ids["Arrival day"]}"' in page
    assert (
        f'<input id="option-{ids["Pronouns"]}" name="option-{ids["Pronouns"]}" type="text"' in page
    )
    assert f'<textarea id="option-{ids["Languages"]}"' in page
    sent = people.attendee.post(
        "/volunteer",
        {
            f"option-{ids['Arrival day']}": "Thu",
            f"option-{ids['Pronouns']}": "they/them",
            f"option-{ids['Languages']}": "English\r\n\r\nFrench \r\nEnglish\r\n",
        },
    )
    assert sent.status_code == 303
    assert api_record(apps, people.attendee.user_id)["options"] == [
        {"name": "Arrival day", "type": "select", "value": "Thu"},
        {"name": "Pronouns", "type": "select", "value": "they/them"},
        {"name": "Languages", "type": "multi", "value": ["English", "French"]},
    ]
    page = people.attendee.get("/volunteer").text
    assert '<option value="Thu" selected>' in page
    assert "English\nFrench</textarea>" in page
    refused = people.attendee.post("/volunteer", {f"option-{ids['Arrival day']}": "Sun"})
    assert refused.status_code == 400
