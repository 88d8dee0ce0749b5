"""The departments' admin pages: administrators create them, rename them and choose leads; a
lead edits their own department's e-mail and visibility. The API's department list follows."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.admin.support import People
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.helpers import database_text
from tests.web.support import audit


def _departments(client: TestClient, apps: Apps) -> dict[str, dict[str, object]]:
    token = apps.service_token("volunteer:read")
    listed = client.get("/api/v0/volunteers/departments", headers=bearer(token))
    assert listed.status_code == 200
    return {d["name"]: d for d in listed.json()}


def test_an_administrator_creates_a_department_and_chooses_its_leads(
    people: People, engine: Engine, apps: Apps, client: TestClient
) -> None:
    admin = people.admin
    created = admin.post("/admin/departments", {"name": "Art Show", "email": "ART@Example.org"})
    assert created.status_code == 303
    path = created.headers["location"].split("?")[0]
    department_id = path.rsplit("/", 1)[1]
    assert admin.post(f"{path}/leads", {"username": "ANN"}).status_code == 303
    assert admin.post(f"{path}/leads", {"username": "hal@example.org"}).status_code == 303
    art = _departments(client, apps)["Art Show"]
    assert art["id"] == department_id
    assert art["email"] == "ART@example.org"
    assert art["publiclyVisible"] is False  # an unticked box
    assert [lead["username"] for lead in art["leads"]] == ["hal", "ann"]  # type: ignore[attr-defined]
    assert art["leads"][1] == {  # type: ignore[index]
        "id": str(people.attendee.user_id),
        "firstName": "Fae",
        "lastName": "Ann",
        "username": "ann",
        "preferredName": None,
        "phone": None,
        "email": "ann@example.org",
    }
    # Leading a department makes Ann an organizer: she now has the admin area, for Art Show.
    assert people.attendee.get(path).status_code == 200
    assert people.attendee.get(f"/admin/departments/{people.security_id}").status_code == 403

    removed = admin.post(f"{path}/leads/{people.attendee.user_id}/remove")
    assert removed.headers["location"] == f"{path}?done=lead_removed"
    leads = _departments(client, apps)["Art Show"]["leads"]
    assert [lead["username"] for lead in leads] == ["hal"]  # type: ignore[attr-defined]
    assert people.attendee.get(path).status_code == 403
    renamed = admin.post(
        path, {"name": "Art", "email": "art@example.org", "publiclyVisible": "true"}
    )
    assert renamed.status_code == 303
    art = _departments(client, apps)["Art"]
    assert art["publiclyVisible"] is True
    events = [e.details for e in audit(engine, "department.updated")]
    assert events == [{"fields": ["name", "email", "publiclyVisible"]}]
    added = [e for e in audit(engine, "department.lead_added") if e.target_id == department_id]
    assert [e.details["username"] for e in added] == ["ann", "hal"]
    assert all(e.actor == f"user:{admin.user_id}" for e in added)


def test_a_lead_edits_their_own_departments_email_and_visibility_but_not_its_name(
    people: People, apps: Apps, client: TestClient
) -> None:
    lead = people.security_lead
    path = f"/admin/departments/{people.security_id}"
    page = lead.get(path)
    assert page.status_code == 200
    assert 'name="name"' not in page.text
    assert "/leads" not in page.text.split("Its volunteers")[1]
    saved = lead.post(path, {"name": "Renamed", "email": "sec@example.org"})
    assert saved.headers["location"] == f"{path}?done=saved"
    listed = _departments(client, apps)
    assert "Renamed" not in listed
    assert listed["Security"]["email"] == "sec@example.org"
    assert listed["Security"]["publiclyVisible"] is False
    listing = lead.get("/admin/departments").text
    assert "Security" in listing
    assert "Hotel" not in listing  # a lead sees their own
    assert 'action="/admin/departments"' not in listing  # and cannot create one


def test_bad_department_fields_are_refused_and_nothing_changes(
    people: People, engine: Engine
) -> None:
    before = database_text(engine)
    refused = people.admin.post("/admin/departments", {"name": "hotel", "email": "nope"})
    assert refused.status_code == 400
    assert "already a department named" in refused.text
    assert "not a valid e-mail address" in refused.text
    assert 'value="nope"' in refused.text
    path = f"/admin/departments/{people.security_id}"
    assert people.security_lead.post(path, {"email": ""}).status_code == 400
    unknown = people.admin.post(f"{path}/leads", {"username": "nobody"})
    assert unknown.status_code == 400
    assert "no user has the username" in unknown.text
    assert database_text(engine) == before
    assert people.admin.get("/admin/departments/424242").status_code == 404
    assert people.security_lead.get("/admin/departments/424242").status_code == 403
