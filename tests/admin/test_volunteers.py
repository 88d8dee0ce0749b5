"""The organizers' review of volunteer applications (/admin/volunteers, admin/volunteers.py),
on both databases: administrators see all, a department's leads their own. What a lead sets is
checked through the API (api.md 2.5)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import Engine

from regdesk.admin import volunteers as admin_volunteers
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.volunteers.form import Application, ContactMethod, save_application
from tests.admin.support import People, person
from tests.conftest import Apps
from tests.volunteers.support import Event, api_record, is_checked, make_event
from tests.web.support import audit


@pytest.fixture
def event(engine: Engine, people: People) -> Event:
    return make_event(engine, people)


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
