"""The registration form's options (/admin/registration-options: admin/options.py, the
registration kind of regdesk.events.options) and the flags on registrations (/admin/flags,
admin/flags.py), on both databases, checked through the API (registrations.md)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from tests.admin.registering import Event, api_registration, make_event
from tests.admin.support import People
from tests.conftest import Apps
from tests.volunteers.support import field_error
from tests.web.support import audit


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    return make_event(engine)


# --- the flags ------------------------------------------------------------------------------


def test_an_admin_adds_renames_and_deletes_flags(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ada = people.admin
    made = ada.post("/admin/flags", {"shortName": "  needs   carer "})
    assert made.status_code == 303
    assert made.headers["location"] == "/admin/flags?done=created"
    listing = ada.get(made.headers["location"]).text
    assert "The flag was added." in listing
    assert '<th scope="row" id="flag-' in listing
    assert ">needs carer</th>" in listing
    for typed, message in (
        ("FURSUITS", "The event already has a flag named 'FURSUITS'."),
        ("   ", "The name may not be empty."),
        ("x" * 101, "The name is longer than 100 characters."),
    ):
        refused = ada.post("/admin/flags", {"shortName": typed})
        assert refused.status_code == 400
        assert field_error(refused.text, "shortName") == message

    fursuits, staff = event.flags["fursuits"], event.flags["staff"]
    renamed = ada.post(f"/admin/flags/{fursuits}", {"shortName": "fursuiter"})
    assert renamed.headers["location"] == "/admin/flags?done=renamed"
    assert {"id": str(fursuits), "shortName": "fursuiter"} in api_registration(
        apps, event.users["fox"]
    )["flags"]
    (event_renamed,) = audit(engine, "registration_flag.renamed")
    assert event_renamed.details == {
        "before": {"shortName": "fursuits"},
        "after": {"shortName": "fursuiter"},
    }
    clash = ada.post(f"/admin/flags/{fursuits}", {"shortName": "Staff"})
    assert clash.status_code == 400
    assert field_error(clash.text, f"flag-{fursuits}") == (
        "The event already has a flag named 'Staff'."
    )
    assert 'value="Staff"' in clash.text  # what was typed, in its row

    deleted = ada.post(f"/admin/flags/{staff}/delete")
    assert deleted.headers["location"] == "/admin/flags?done=deleted"
    assert api_registration(apps, event.users["fox"])["flags"] == [
        {"id": str(fursuits), "shortName": "fursuiter"}
    ]
    (event_deleted,) = audit(engine, "registration_flag.deleted")
    assert event_deleted.details == {"shortName": "staff", "registrations": 1}
    assert ada.post(f"/admin/flags/{staff}", {"shortName": "x"}).status_code == 404


# --- the registration options ---------------------------------------------------------------


def option_fields(name: str, kind: str, choices: str = "", position: str = "") -> dict[str, str]:
    return {"name": name, "type": kind, "choices": choices, "position": position}


def test_registration_options_are_managed_apart_from_the_volunteer_forms(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    ada = people.admin
    listing = ada.get("/admin/registration-options")
    assert listing.status_code == 200
    assert "<h1>Registration options</h1>" in listing.text
    assert "Options of the registration form" in listing.text
    for option_id in event.options.values():
        assert f'href="/admin/registration-options/{option_id}"' in listing.text
    assert "T-shirt size" not in ada.get("/admin/options").text  # the volunteer form's own
    made = ada.post("/admin/registration-options/new", option_fields("Pronouns", "text"))
    assert made.headers["location"] == "/admin/registration-options?done=created"
    assert (
        "The option was added to the registration form." in ada.get(made.headers["location"]).text
    )
    (created,) = [
        e for e in audit(engine, "registration_option.created") if e.details["name"] == "Pronouns"
    ]
    assert created.details["type"] == "text"
    assert audit(engine, "event_option.created") == []

    size = event.options["T-shirt size"]  # fox answered it
    refused = ada.post(f"/admin/registration-options/{size}", option_fields("T-shirt size", "text"))
    assert refused.status_code == 400
    assert field_error(refused.text, "type") == (
        "Attendees have answered this option, so its type cannot change."
    )
    renamed = ada.post(
        f"/admin/registration-options/{size}", option_fields("Shirt", "select", "S\nM\nL\nXL")
    )
    assert renamed.status_code == 303
    assert api_registration(apps, event.users["fox"])["options"] == [
        {"name": "Shirt", "type": "select", "value": "M"}
    ]
    confirm = ada.get(f"/admin/registration-options/{size}/delete")
    assert "The 1 answer attendees gave to it" in confirm.text
    assert ada.post(f"/admin/registration-options/{size}/delete").status_code == 303
    assert api_registration(apps, event.users["fox"])["options"] == []
    (deleted,) = audit(engine, "registration_option.deleted")
    assert deleted.details == {"name": "Shirt", "answers": 1}
    assert ada.get(f"/admin/registration-options/{size}").status_code == 404
