"""The roles' admin pages: create, rename, the staff flag, delete; the API follows each."""

from __future__ import annotations

import re

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.roles.models import Role
from regdesk.roles.service import assign_role, get_role
from regdesk.transfer.importer import import_document
from tests.admin.support import People
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.helpers import database_text
from tests.web.support import audit


def _role_id(engine: Engine, name: str) -> int:
    with Session(engine) as session:
        return session.scalars(select(Role.id).where(Role.name == name)).one()


def _is_staff(client: TestClient, token: str, user_id: int) -> bool:
    record = client.get(f"/api/v0/users/{user_id}/volunteer", headers=bearer(token))
    assert record.status_code == 200, record.text
    staff: bool = record.json()["user"]["isStaff"]
    return staff


def test_a_role_is_created_renamed_flagged_and_deleted(
    people: People, engine: Engine, apps: Apps, client: TestClient
) -> None:
    ann = people.attendee
    import_document(
        engine,
        {
            "volunteers": [
                {"user": "ann", "departments": [{"name": "Security", "states": ["interest"]}]}
            ]
        },
        actor=Actor("test"),
        phone_region="US",
    )
    admin = people.admin
    created = admin.post("/admin/roles", {"name": "Crew"})
    assert created.headers["location"] == "/admin/roles?done=created"
    crew = _role_id(engine, "Crew")
    with write_session(engine) as session:
        assign_role(session, Actor("test"), ann.user_id, get_role(session, crew), "convention")
    token = apps.service_token("user:read volunteer:read")
    assert not _is_staff(client, token, ann.user_id)
    listing = admin.get("/admin/roles").text
    assert re.search(rf'<a href="/admin/users\?role={crew}">1</a>', listing)  # one holder

    saved = admin.post(f"/admin/roles/{crew}", {"name": "Staff", "staff": "true"})
    assert saved.headers["location"] == f"/admin/roles/{crew}?done=saved"
    assert _is_staff(client, token, ann.user_id)  # isStaff follows the flag at once
    roles = client.get("/api/v0/roles", headers=bearer(token)).json()["data"]
    assert roles == [{"id": str(crew), "name": "Staff", "isStaff": True}]
    page = admin.get(f"/admin/roles/{crew}").text
    assert "1 user holds this role" in page
    assert "stop being staff" in page

    deleted = admin.post(f"/admin/roles/{crew}/delete")
    assert deleted.headers["location"] == "/admin/roles?done=deleted"
    assert not _is_staff(client, token, ann.user_id)
    assert client.get("/api/v0/roles", headers=bearer(token)).json()["data"] == []
    assert client.get(f"/api/v0/users/{ann.user_id}/roles", headers=bearer(token)).json() == {
        "data": []
    }
    assert admin.get(f"/admin/roles/{crew}").status_code == 404
    actions = [e.details for e in audit(engine, "role.deleted")]
    assert actions == [{"name": "Staff", "staff": True, "holders": 1}]
    assert [e.details["fields"] for e in audit(engine, "role.updated")] == [["name", "staff"]]


def test_a_role_name_is_required_and_unique_whatever_its_case(
    people: People, engine: Engine
) -> None:
    people.admin.post("/admin/roles", {"name": "Staff", "staff": "true"})
    before = database_text(engine)
    for name, message in [
        ("", "may not be empty"),
        ("STAFF", "already a role named"),
        ("x" * 101, "longer than 100"),
    ]:
        refused = people.admin.post("/admin/roles", {"name": name})
        assert refused.status_code == 400, name
        assert message in refused.text
        assert 'aria-invalid="true"' in refused.text
    assert database_text(engine) == before
    dealer = people.admin.post("/admin/roles", {"name": "Dealer"})
    assert dealer.status_code == 303
    staff = _role_id(engine, "Staff")
    renamed = people.admin.post(f"/admin/roles/{staff}", {"name": "dealer"})
    assert renamed.status_code == 400
    assert "already a role named" in renamed.text
    same = people.admin.post(f"/admin/roles/{staff}", {"name": "Staff", "staff": "true"})
    assert same.headers["location"] == f"/admin/roles/{staff}?done=unchanged"
