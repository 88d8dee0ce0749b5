"""The current event's registrations in the admin area (admin/registrations.py), on both
databases: the list and its filters, the CSV for badge printing, a registration's badge name,
answers and flags. What staff set is checked through the API, as a client reads it
(registrations.md)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.registrations.lists import CSV_COLUMNS
from tests.admin.registering import Event, api_registration, make_event
from tests.admin.support import People
from tests.conftest import PUBLIC_URL, Apps
from tests.volunteers.support import field_error, is_checked
from tests.web.support import audit

EDITS_ENDED = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
LISTED = re.compile(r'<th scope="row"><a href="/admin/registrations/(\d+)">')


@pytest.fixture
def app(engine: Engine, database_url: str) -> FastAPI:
    """An instance whose attendees can no longer change their registrations: staff still can."""
    settings = load_settings(
        database_url=database_url, public_url=PUBLIC_URL, registration_edits_until=EDITS_ENDED
    )
    return create_app(settings)


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    return make_event(engine)


def listed(html: str) -> list[int]:
    """The registration ids of the list, in order."""
    return [int(found) for found in LISTED.findall(html)]


def ids(event: Event, *names: str) -> list[int]:
    return [event.held[name].registration_id for name in names]


# --- the list and the CSV -------------------------------------------------------------------


@pytest.mark.postgresql_too
def test_an_admin_lists_and_filters_the_registrations(people: People, event: Event) -> None:
    ada = people.admin
    every = ada.get("/admin/registrations")
    assert every.status_code == 200
    assert listed(every.text) == ids(event, "owl", "elk", "fox")  # by name: -Owl-, Fae Elk...
    assert "3 registrations." in every.text
    wanted = {
        f"product={event.sponsor}": ["owl"],
        "status=paid": ["fox"],
        "status=cancelled": ["elk"],
        f"flag={event.flags['fursuits']}": ["fox"],
        "checked_in=yes": ["fox"],
        "checked_in=no": ["owl", "elk"],
        "q=the+fox": ["fox"],  # a badge name
        f"q={event.held['owl'].number}": ["owl"],
        f"product={event.attendee}&status=unpaid": [],
        "q=%25": [],
        "status=bogus&checked_in=maybe&product=x": ["owl", "elk", "fox"],  # no filter
    }
    for query, names in wanted.items():
        assert listed(ada.get(f"/admin/registrations?{query}").text) == ids(event, *names), query
    fox_row = ada.get("/admin/registrations?status=paid").text
    assert (
        '<span class="tag tag-muted">fursuits</span> <span class="tag tag-muted">staff</span>'
        in (fox_row)
    )
    assert 'href="/admin/registrations.csv?status=paid"' in fox_row


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.postgresql_too
def test_the_csv_for_badge_printing_is_the_filtered_list_quoted_and_formula_free(
    people: People, event: Event, engine: Engine
) -> None:
    answer = people.admin.get("/admin/registrations.csv")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="registrations-\d{4}-\d\d-\d\d\.csv"',
        answer.headers["content-disposition"],
    )
    assert answer.headers["cache-control"] == "no-store"
    n = {name: event.held[name].number for name in event.held}
    assert csv_rows(answer.text) == [
        CSV_COLUMNS,
        [n["owl"], "'=HYPERLINK(\"http://x.test\")", "Fae", "Owl", "'-Owl-", "sponsor", "unpaid",
         "", "no"],
        [n["elk"], 'Elk, "the Great"', "Fae", "Elk", "", "attendee", "cancelled", "", "no"],
        [n["fox"], "Fae the Fox", "Fae", "Fox", "", "attendee", "paid", "fursuits; staff", "yes"],
    ]  # fmt: skip
    assert '"Elk, ""the Great"""' in answer.text  # quoted as RFC 4180 says
    assert answer.text.endswith("\r\n")
    paid_only = people.admin.get("/admin/registrations.csv?status=paid&checked_in=yes")
    assert [row[0] for row in csv_rows(paid_only.text)] == ["orderId", n["fox"]]
    exported = audit(engine, "registrations.exported")
    assert [e.details for e in exported] == [
        {"registrations": 3, "filters": ""},
        {"registrations": 1, "filters": "status=paid&checked_in=yes"},
    ]


# --- one registration -----------------------------------------------------------------------


def edit_form(event: Event, badge: str = "", **answers: Any) -> dict[str, Any]:
    form: dict[str, Any] = {"badgeName": badge}
    for name, option_id in event.options.items():
        form[f"option-{option_id}"] = answers.get(name.split()[0].replace("-", "_"), "")
    return form


def test_staff_edit_a_badge_name_and_answers_after_attendees_no_longer_can(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    fox = event.held["fox"]
    page = people.admin.get(f"/admin/registrations/{fox.registration_id}")
    assert page.status_code == 200
    assert 'value="Fae the Fox"' in page.text
    assert '<option value="M" selected>M</option>' in page.text
    assert f'href="/admin/orders/{fox.number}"' in page.text
    saved = people.admin.post(
        f"/admin/registrations/{fox.registration_id}",
        edit_form(event, " Fae   Reynard ", T_shirt="L", Diet=["Vegan", "Halal"], Notes="No cats",
                  Nights="2.5"),
    )  # fmt: skip
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == f"/admin/registrations/{fox.registration_id}?done=saved"
    record = api_registration(apps, event.users["fox"])
    assert record["badgeName"] == "Fae Reynard"
    assert record["options"] == [
        {"name": "T-shirt size", "type": "select", "value": "L"},
        {"name": "Diet", "type": "multi", "value": ["Vegan", "Halal"]},
        {"name": "Notes", "type": "text", "value": "No cats"},
        {"name": "Nights", "type": "number", "value": 2.5},
    ]
    (changed,) = audit(engine, "registration.updated")
    assert (changed.target_type, changed.target_id) == ("registration", str(fox.registration_id))
    assert sorted(changed.details["fields"]) == ["Diet", "Nights", "Notes", "T-shirt size",
                                                 "badgeName"]  # fmt: skip
    again = people.admin.get(saved.headers["location"]).text
    assert "The registration was saved." in again
    assert is_checked(again, f"option-{event.options['Diet']}-1")
    # Emptied, every answer and the badge name go: the badge shows the person's name.
    cleared = people.admin.post(f"/admin/registrations/{fox.registration_id}", edit_form(event))
    assert cleared.status_code == 303
    record = api_registration(apps, event.users["fox"])
    assert (record["badgeName"], record["options"]) == (None, [])


@pytest.mark.parametrize(
    ("answers", "field", "message"),
    [
        ({"T_shirt": "XXL"}, "T-shirt size", "Choose among the choices given."),
        ({"Diet": ["Vegan", "Paleo"]}, "Diet", "Choose among the choices given."),
        ({"Nights": "many"}, "Nights", "Enter a number, such as 12 or 7.5."),
        ({"Notes": "x" * 1001}, "Notes", "at most 1000 characters"),
        ({"badge": "Bell\x07"}, "badgeName", "The badge name may not hold control characters."),
        ({"badge": "x" * 101}, "badgeName", "The badge name is longer than 100 characters."),
    ],
)
def test_an_edit_that_does_not_make_sense_is_refused_and_writes_nothing(
    people: People,
    event: Event,
    apps: Apps,
    answers: dict[str, Any],
    field: str,
    message: str,
) -> None:
    fox = event.held["fox"]
    before = api_registration(apps, event.users["fox"])
    given = {"T_shirt": "S", **answers}  # the parameter itself stays as it is, for the next run
    badge = given.pop("badge", "A new name")
    form = edit_form(event, badge, **given)
    refused = people.admin.post(f"/admin/registrations/{fox.registration_id}", form)
    assert refused.status_code == 400
    key = field if field == "badgeName" else f"option-{event.options[field]}"
    assert message in field_error(refused.text, key)
    assert f'href="#{key}"' in refused.text
    assert api_registration(apps, event.users["fox"]) == before


def test_a_cancelled_registration_is_not_edited(people: People, event: Event) -> None:
    elk = event.held["elk"]
    page = people.admin.get(f"/admin/registrations/{elk.registration_id}")
    assert "it can no longer be changed" in page.text
    refused = people.admin.post(
        f"/admin/registrations/{elk.registration_id}", edit_form(event, "Elk")
    )
    assert refused.status_code == 400
    assert "This registration was cancelled." in refused.text


def test_staff_set_a_registrations_flags(
    people: People, event: Event, apps: Apps, engine: Engine
) -> None:
    owl = event.held["owl"]
    fursuits, staff = event.flags["fursuits"], event.flags["staff"]
    saved = people.admin.post(
        f"/admin/registrations/{owl.registration_id}/flags", {"flag": [str(staff), str(fursuits)]}
    )
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/admin/registrations/{owl.registration_id}?done=flags"
    assert api_registration(apps, event.users["owl"])["flags"] == [
        {"id": str(fursuits), "shortName": "fursuits"},
        {"id": str(staff), "shortName": "staff"},
    ]
    (changed,) = audit(engine, "registration.flags_changed")
    assert changed.details == {"before": [], "after": ["fursuits", "staff"]}
    page = people.admin.get(saved.headers["location"]).text
    assert "The flags were saved." in page
    assert is_checked(page, f"flag-{staff}")
    unknown = people.admin.post(
        f"/admin/registrations/{owl.registration_id}/flags", {"flag": [str(staff), "999999"]}
    )
    assert unknown.status_code == 400
    assert field_error(unknown.text, "flags") == "No such flag."
    same = people.admin.post(
        f"/admin/registrations/{owl.registration_id}/flags", {"flag": [str(fursuits), str(staff)]}
    )
    assert same.headers["location"].endswith("?done=unchanged")
    removed = people.admin.post(f"/admin/registrations/{owl.registration_id}/flags", {})
    assert removed.status_code == 303
    assert api_registration(apps, event.users["owl"])["flags"] == []


def test_registrations_are_for_administrators_with_the_forms_token(
    people: People, event: Event, apps: Apps
) -> None:
    fox = event.held["fox"]
    before = api_registration(apps, event.users["fox"])
    for someone in (people.security_lead, people.attendee):
        assert someone.get("/admin/registrations").status_code == 403
        assert someone.get("/admin/registrations.csv").status_code == 403
        assert someone.get(f"/admin/registrations/{fox.registration_id}").status_code == 403
        edit = someone.post(f"/admin/registrations/{fox.registration_id}", edit_form(event, "X"))
        assert edit.status_code == 403
        flags = someone.post(f"/admin/registrations/{fox.registration_id}/flags", {})
        assert flags.status_code == 403
    assert 'href="/admin/registrations"' not in people.security_lead.get("/admin").text
    for path, form in (
        (f"/admin/registrations/{fox.registration_id}", edit_form(event, "Forged")),
        (f"/admin/registrations/{fox.registration_id}/flags", {}),
        ("/admin/flags", {"shortName": "forged"}),
        (f"/admin/flags/{event.flags['staff']}/delete", {}),
    ):
        forged = people.admin.post(path, form, token="forged")
        assert forged.status_code == 403, path
        assert "Form not accepted" in forged.text
    assert api_registration(apps, event.users["fox"]) == before
    for path in ("/admin/registrations/999999", "/admin/registrations/abc"):
        missing = people.admin.get(path)
        assert missing.status_code == 404
        assert "No such registration" in missing.text
