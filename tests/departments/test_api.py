"""The departments list (api.md 2.6, 4.5; decisions.md, Resources)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from tests.api.support import app_engine, headers, import_rich, nested, statements
from tests.client import TestClient
from tests.conftest import Apps
from tests.transfer.support import import_

DEPARTMENTS = "/api/v0/volunteers/departments"


def test_every_department_with_its_leads_in_a_bare_array(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    ids = import_rich(engine).departments
    response = client.get(DEPARTMENTS, headers=headers(apps, "volunteer:read"))
    assert response.status_code == 200, response.text
    assert response.json() == [
        {
            "id": str(ids["Security"]),
            "name": "Security",
            "email": "security@example.org",
            "publiclyVisible": True,
            "leads": [nested("fox"), nested("Zoë")],  # in user-id order
        },
        {
            "id": str(ids["Registration"]),
            "name": "Registration",
            "email": "reg@example.org",
            "publiclyVisible": False,  # hidden, and listed all the same
            "leads": [nested("miyazaki")],
        },
        {
            "id": str(ids["Art Show"]),
            "name": "Art Show",
            "email": "art@example.org",
            "publiclyVisible": True,
            "leads": [],
        },
    ]


def test_the_list_costs_the_same_statements_whatever_its_length(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    import_rich(engine)
    auth = headers(apps, "volunteer:read")
    with statements(app_engine(client)) as few:
        assert len(client.get(DEPARTMENTS, headers=auth).json()) == 3
    more = {
        "departments": [
            {"name": f"Crew {n}", "email": f"crew{n}@example.org", "leads": ["otter", "fox"]}
            for n in range(40)
        ]
    }
    import_(engine, more)
    with statements(app_engine(client)) as many:
        listed = client.get(DEPARTMENTS, headers=auth).json()
    assert len(listed) == 43
    assert listed[-1]["leads"] == [nested("fox"), nested("otter")]
    assert len(many) == len(few), many


def test_a_change_made_anywhere_shows_in_the_next_list(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """The list's JSON is kept between requests whose rows are the same (departments_json):
    any change to what it shows, even by SQL outside regdesk, is in the next answer."""
    ids = import_rich(engine).departments
    auth = headers(apps, "volunteer:read")
    before = client.get(DEPARTMENTS, headers=auth).json()
    assert client.get(DEPARTMENTS, headers=auth).json() == before
    changes = [
        "UPDATE users SET first_name = 'Renamed' WHERE username = 'fox'",
        f"UPDATE departments SET name = 'Safety' WHERE id = {ids['Security']}",
        f"UPDATE departments SET publicly_visible = true WHERE id = {ids['Registration']}",
        f"DELETE FROM department_leads WHERE department_id = {ids['Registration']}",
    ]
    with engine.begin() as connection:
        for change in changes:
            connection.execute(text(change))
    after = client.get(DEPARTMENTS, headers=auth).json()
    security, registration, _ = after
    assert security["name"] == "Safety"
    assert security["leads"][0]["firstName"] == "Renamed"
    assert registration["publiclyVisible"] is True
    assert registration["leads"] == []


def _list_statements(sent: list[tuple[str, Any]]) -> list[str]:
    return [str(statement) for statement, _ in sent if "depart" in str(statement)]


def test_once_rendered_the_list_is_one_statement_of_stored_documents(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """departments.records: after a write through regdesk (here an import), the list is the
    stored documents joined by the database, in one statement; nothing read from the tables."""
    import_rich(engine)
    auth = headers(apps, "volunteer:read")
    with statements(app_engine(client)) as sent:
        listed = client.get(DEPARTMENTS, headers=auth).json()
    assert [d["name"] for d in listed] == ["Security", "Registration", "Art Show"]
    read = _list_statements(sent)
    assert len(read) == 1, read
    assert "department_documents" in read[0], read
    assert "department_leads" not in read[0], read


def test_the_stored_list_and_the_list_rendered_from_the_tables_are_the_same_bytes(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    import_rich(engine)
    auth = headers(apps, "volunteer:read")
    stored = client.get(DEPARTMENTS, headers=auth)
    with engine.begin() as connection:  # every department queued, as a change by hand does
        connection.execute(
            text("INSERT INTO document_queue (kind, key) SELECT 'department', id FROM departments")
        )
    with statements(app_engine(client)) as sent:
        rendered = client.get(DEPARTMENTS, headers=auth)
    assert any("department_leads" in s for s in _list_statements(sent))  # from the tables
    assert rendered.content == stored.content
    assert stored.headers["content-type"] == "application/json"


def test_leads_deleted_with_their_users_leave_the_list(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """A user deleted takes their leads with them (the foreign key's cascade), whose triggers
    queue the departments again: by SQL outside regdesk, and then through a write of regdesk's,
    which renders them, the next list is without the lead."""
    ids = import_rich(engine).departments
    auth = headers(apps, "volunteer:read")
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM users WHERE username = 'fox'"))
    security = client.get(DEPARTMENTS, headers=auth).json()[0]
    assert security["leads"] == [nested("Zoë")]
    import_(engine, {"departments": [{"name": "Crew", "email": "crew@example.org"}]})
    with engine.connect() as connection:
        queued = connection.execute(text("SELECT count(*) FROM document_queue")).scalar()
        stored = connection.execute(
            text("SELECT body FROM department_documents WHERE department_id = :id"),
            {"id": ids["Security"]},
        ).scalar_one()
    assert queued == 0
    assert '"fox"' not in stored
    assert client.get(DEPARTMENTS, headers=auth).json()[0] == security
