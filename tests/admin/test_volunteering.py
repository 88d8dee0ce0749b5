"""The volunteer application form (/volunteer), the event's options (/admin/options) and the
organizers' review of applications (/admin/volunteers), on both databases.

What a volunteer sends, and what a lead sets, is checked through the API (api.md 2.5)."""

from __future__ import annotations

import html as html_module
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from regdesk.admin import volunteers as admin_volunteers
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.events.models import EventOption
from regdesk.volunteers.form import Application, ContactMethod, save_application
from regdesk.volunteers.models import Volunteer
from regdesk.volunteers.options import OptionSpec, create_option
from tests.admin.support import People, Person, department, person
from tests.conftest import Apps, bearer
from tests.web.support import audit

STATES = ["experience", "interest", "avoid", "assignment", "request"]


@dataclass(frozen=True)
class Event:
    """The options of the current event, and the departments, by name -> id."""

    options: dict[str, int]
    departments: dict[str, int]


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    options = {}
    with write_session(engine) as session:
        for spec in (
            OptionSpec("Shirt size", "select", "S\nM\nL\nXL"),
            OptionSpec("Skills", "multi", "First aid\nDriving\nSign language"),
            OptionSpec("Notes", "text"),
            OptionSpec("Hours", "number"),
        ):
            options[spec.name] = create_option(session, Actor("test"), spec).id
    departments = {
        "Security": people.security_id,
        "Hotel": people.hotel_id,
        "Registration": department(engine, "Registration"),
        "Backstage": department(engine, "Backstage", visible=False),
    }
    return Event(options, departments)


def api_record(apps: Apps, user_id: int) -> Any:
    """GET /api/v0/users/{id}/volunteer with a service token, as a tool reads it."""
    response = apps.client.get(
        f"/api/v0/users/{user_id}/volunteer", headers=bearer(apps.service_token("volunteer:read"))
    )
    return response.json() if response.status_code == 200 else response.status_code


def contact(index: int, name: str, value: str, primary: bool = False) -> dict[str, str]:
    fields = {f"contact-{index}-name": name, f"contact-{index}-value": value}
    if primary:
        fields[f"contact-{index}-primary"] = "yes"
    return fields


def full_form(event: Event) -> dict[str, Any]:
    """Every kind of field filled: two contact rows of three, two interests, one avoid and an
    experience, and each type of option."""
    o, d = event.options, event.departments
    return {
        **contact(0, "Discord", "fox#1234", primary=True),
        **contact(1, "", ""),
        **contact(2, "Telegram", "@fae_fox"),
        f"department-{d['Security']}": ["interest", "experience"],
        f"department-{d['Registration']}": ["interest"],
        f"department-{d['Hotel']}": ["avoid"],
        f"option-{o['Shirt size']}": "L",
        f"option-{o['Skills']}": ["First aid", "Driving"],
        f"option-{o['Notes']}": "Can lift 20 kg",
        f"option-{o['Hours']}": "12",
    }


def expected_record(event: Event, user: Person) -> dict[str, Any]:
    d = event.departments
    return {
        "contactMethods": [
            {"name": "Discord", "isPrimary": True, "value": "fox#1234"},
            {"name": "Telegram", "isPrimary": False, "value": "@fae_fox"},
        ],
        # Departments in id order (Security, Hotel, Registration), states in api.md's order.
        "departments": [
            {"id": str(d["Security"]), "name": "Security", "states": ["experience", "interest"]},
            {"id": str(d["Hotel"]), "name": "Hotel", "states": ["avoid"]},
            {"id": str(d["Registration"]), "name": "Registration", "states": ["interest"]},
        ],
        "user": {
            "id": str(user.user_id),
            "firstName": "Fae",
            "lastName": user.username.capitalize(),
            "username": user.username,
            "preferredName": None,
            "phone": None,
            "email": f"{user.username}@example.org",
            "isStaff": False,
        },
        "options": [
            {"name": "Shirt size", "type": "select", "value": "L"},
            {"name": "Skills", "type": "multi", "value": ["First aid", "Driving"]},
            {"name": "Notes", "type": "text", "value": "Can lift 20 kg"},
            {"name": "Hours", "type": "number", "value": 12},
        ],
    }


def without_times(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in ("createdAt", "updatedAt")}


def volunteer_count(engine: Engine) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(Volunteer)) or 0


def volunteer_id(engine: Engine, user_id: int) -> int:
    with Session(engine) as session:
        found = session.scalar(select(Volunteer.id).where(Volunteer.user_id == user_id))
        assert found is not None
        return found


def is_checked(html: str, element_id: str) -> bool:
    tag = re.search(rf'<input id="{re.escape(element_id)}"[^>]*>', html)
    assert tag is not None, f"no input {element_id}"
    return " checked" in tag.group(0)


def field_error(html: str, name: str) -> str:
    """The message shown under a field, which the field points at (aria-describedby)."""
    found = re.search(rf'<p class="field-error" id="{re.escape(name)}-error">([^<]*)</p>', html)
    assert found is not None, f"no error shown for {name}"
    assert f'aria-describedby="{name}-error"' in html or f"{name}-error" in html
    return html_module.unescape(found.group(1))


# --- the application form ------------------------------------------------------------------


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


def test_a_form_without_its_csrf_token_changes_nothing(
    people: People, event: Event, engine: Engine
) -> None:
    forged = people.attendee.post("/volunteer", full_form(event), token="forged")
    assert forged.status_code == 403
    assert volunteer_count(engine) == 0


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


# --- event options (administrators) -----------------------------------------------------------


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


# --- reviewing applications ----------------------------------------------------------------


@pytest.fixture
def applications(engine: Engine, app: Any, people: People, event: Event) -> dict[str, int]:
    """Volunteer ids by username: ann (interest in Security), vic (interest in Hotel), wes
    (experience and interest in Security, avoid Hotel), xan (no department)."""
    d = event.departments
    wanted = {
        "ann": {d["Security"]: {"interest"}},
        "vic": {d["Hotel"]: {"interest"}},
        "wes": {d["Security"]: {"experience", "interest"}, d["Hotel"]: {"avoid"}},
        "xan": {},
    }
    users = {"ann": people.attendee.user_id}
    for username in ("vic", "wes", "xan"):
        users[username] = person(app, engine, username).user_id
    ids = {}
    with write_session(engine) as session:
        for username, preferences in wanted.items():
            application = Application([ContactMethod("Discord", username, True)], preferences)
            ids[username] = save_application(
                session, Actor("test"), users[username], application
            ).id
    return ids


def listed(html: str) -> list[str]:
    """The usernames in the list of applications, in order."""
    return re.findall(r"</a></th>\s*<td>([^<]+)</td>", html)


def test_an_admin_lists_every_application_and_filters_them(
    people: People, event: Event, applications: dict[str, int]
) -> None:
    ada, d = people.admin, event.departments
    every = ada.get("/admin/volunteers")
    assert every.status_code == 200
    assert sorted(listed(every.text)) == ["ann", "vic", "wes", "xan"]
    assert "4 applications." in every.text
    security = ada.get(f"/admin/volunteers?department={d['Security']}")
    assert sorted(listed(security.text)) == ["ann", "wes"]
    interest = ada.get(f"/admin/volunteers?department={d['Hotel']}&state=interest")
    assert listed(interest.text) == ["vic"]
    assert ada.get("/admin/volunteers?state=avoid").text.count("/admin/volunteers/") == 1
    assert listed(ada.get("/admin/volunteers?state=experience").text) == ["wes"]
    assert listed(ada.get("/admin/volunteers?q=XAN").text) == ["xan"]
    assert listed(ada.get("/admin/volunteers?q=fae+wes").text) == ["wes"]
    assert listed(ada.get("/admin/volunteers?q=%25").text) == []  # no wildcard
    assert listed(ada.get("/admin/volunteers?state=bogus&department=x").text) == []
    # Each row shows the states in every department, for an administrator.
    assert "Hotel</span>:" in every.text
    assert "Security</span>:" in every.text


def test_the_list_is_paginated(
    people: People,
    applications: dict[str, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admin_volunteers, "PER_PAGE", 3)
    first = people.admin.get("/admin/volunteers")
    assert len(listed(first.text)) == 3
    assert "page 1 of 2" in first.text
    assert 'href="/admin/volunteers?page=2" rel="next"' in first.text
    second = people.admin.get("/admin/volunteers?page=2")
    assert len(listed(second.text)) == 1
    assert 'href="/admin/volunteers" rel="prev"' in second.text
    assert sorted(listed(first.text) + listed(second.text)) == ["ann", "vic", "wes", "xan"]
    filtered = people.admin.get("/admin/volunteers?q=a&state=interest")
    assert 'rel="next"' not in filtered.text
    assert 'rel="prev"' not in filtered.text


def test_a_lead_sees_only_applications_in_their_departments(
    people: People, event: Event, applications: dict[str, int]
) -> None:
    d = event.departments
    sam = people.security_lead
    mine = sam.get("/admin/volunteers")
    assert mine.status_code == 200
    assert sorted(listed(mine.text)) == ["ann", "wes"]
    assert "Hotel" not in mine.text  # neither wes's avoid nor the filter's choice
    assert listed(sam.get("/admin/volunteers?state=interest").text) == ["ann", "wes"]
    assert listed(sam.get("/admin/volunteers?state=avoid").text) == []  # that is Hotel's
    assert sam.get(f"/admin/volunteers?department={d['Hotel']}").status_code == 403
    own = sam.get(f"/admin/volunteers/{applications['wes']}")
    assert own.status_code == 200
    assert "Security" in own.text
    assert "Hotel" not in own.text
    assert f'/admin/users/{people.attendee.user_id}"' not in own.text
    assert listed(people.hotel_lead.get("/admin/volunteers").text) == ["vic", "wes"]


def test_a_lead_assigns_a_volunteer_and_the_api_shows_it(
    people: People, event: Event, applications: dict[str, int], apps: Apps, engine: Engine
) -> None:
    security = event.departments["Security"]
    ann = applications["ann"]
    page = people.security_lead.get(f"/admin/volunteers/{ann}")
    assert f'action="/admin/volunteers/{ann}/departments/{security}"' in page.text
    assert is_checked(page.text, f"department-{security}-interest")
    assert not is_checked(page.text, f"department-{security}-assignment")
    saved = people.security_lead.post(
        f"/admin/volunteers/{ann}/departments/{security}", {"states": ["interest", "assignment"]}
    )
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/admin/volunteers/{ann}?done=saved#department-{security}"
    assert api_record(apps, people.attendee.user_id)["departments"] == [
        {"id": str(security), "name": "Security", "states": ["interest", "assignment"]}
    ]
    (changed,) = audit(engine, "volunteer.states_changed")
    assert changed.actor == f"user:{people.security_lead.user_id}"
    assert changed.details == {"department": security, "added": ["assignment"], "removed": []}
    again = people.security_lead.get(saved.headers["location"].split("#")[0])
    assert "The department&#39;s states were saved." in again.text
    assert is_checked(again.text, f"department-{security}-assignment")
    assigned = people.security_lead.get("/admin/volunteers?state=assignment")
    assert listed(assigned.text) == ["ann"]


def test_the_lead_of_another_department_can_neither_see_nor_change_an_application(
    people: People, event: Event, applications: dict[str, int], apps: Apps
) -> None:
    d, ann, hal = event.departments, applications["ann"], people.hotel_lead
    before = api_record(apps, people.attendee.user_id)
    assert hal.get(f"/admin/volunteers/{ann}").status_code == 403
    assert "ann" not in listed(hal.get("/admin/volunteers").text)
    for department_id in (d["Security"], d["Hotel"], d["Registration"]):
        refused = hal.post(
            f"/admin/volunteers/{ann}/departments/{department_id}", {"states": ["assignment"]}
        )
        assert refused.status_code == 403
    # wes is in Hotel too: hal sets Hotel's states on him, never Security's.
    wes = applications["wes"]
    assert (
        hal.post(f"/admin/volunteers/{wes}/departments/{d['Security']}", {"states": []}).status_code
        == 403
    )
    assert api_record(apps, people.attendee.user_id) == before
    for missing in ("999999", "x"):
        assert hal.get(f"/admin/volunteers/{missing}").status_code in (403, 404)
        assert (
            hal.post(
                f"/admin/volunteers/{missing}/departments/{d['Hotel']}", {"states": []}
            ).status_code
            == 403
        )


def test_an_admin_sets_states_in_any_department(
    people: People, event: Event, applications: dict[str, int], apps: Apps
) -> None:
    d, xan = event.departments, applications["xan"]
    page = people.admin.get(f"/admin/volunteers/{xan}")
    assert "Add to a department" in page.text
    assert 'href="/admin/users/' in page.text
    backstage = d["Backstage"]  # hidden from applicants, not from organizers
    saved = people.admin.post(
        f"/admin/volunteers/{xan}/departments/{backstage}", {"states": ["request", "bogus"]}
    )
    assert saved.status_code == 303
    xan_user = re.search(r'href="/admin/users/(\d+)"', page.text)
    assert xan_user is not None
    assert api_record(apps, int(xan_user.group(1)))["departments"] == [
        {"id": str(backstage), "name": "Backstage", "states": ["request"]}
    ]
    unchanged = people.admin.post(
        f"/admin/volunteers/{xan}/departments/{backstage}", {"states": ["request"]}
    )
    assert unchanged.headers["location"].startswith(f"/admin/volunteers/{xan}?done=unchanged")
    assert people.admin.get("/admin/volunteers/999999").status_code == 404
    assert people.admin.post(f"/admin/volunteers/{xan}/departments/999999", {}).status_code == 404


def test_a_lead_who_removes_every_state_goes_back_to_the_list(
    people: People, event: Event, applications: dict[str, int]
) -> None:
    security, ann = event.departments["Security"], applications["ann"]
    removed = people.security_lead.post(f"/admin/volunteers/{ann}/departments/{security}", {})
    assert removed.status_code == 303
    assert removed.headers["location"] == "/admin/volunteers"
    assert people.security_lead.get(f"/admin/volunteers/{ann}").status_code == 403
