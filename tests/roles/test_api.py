"""Roles: the list, a user's roles, and giving and taking them (decisions.md, Resources)."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.api.support import (
    assert_not_found,
    audit_events,
    headers,
    import_rich,
    load_small_demo,
    service_app,
    validation_fields,
)
from tests.client import TestClient
from tests.conftest import Apps

ROLES = "/api/v0/roles"


def roles_of(client: TestClient, auth: dict[str, str], user_id: int) -> list[dict[str, str]]:
    response = client.get(f"/api/v0/users/{user_id}/roles", headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ["data"]
    data: list[dict[str, str]] = body["data"]
    return data


def test_role_list_renders_every_role(client: TestClient, apps: Apps, engine: Engine) -> None:
    ids = import_rich(engine).roles
    response = client.get(ROLES, headers=headers(apps, "user:read"))
    assert response.status_code == 200, response.text
    assert response.json() == {
        "data": [
            {"id": str(ids["Staff"]), "name": "Staff", "isStaff": True},
            {"id": str(ids["Dealer"]), "name": "Dealer", "isStaff": False},
            {"id": str(ids["Board"]), "name": "Board", "isStaff": True},
        ],
        "nextPage": None,
        "hasMore": False,
    }


def test_a_users_roles_with_their_scopes(client: TestClient, apps: Apps, engine: Engine) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read")
    roles, users = imported.roles, imported.users
    assert roles_of(client, auth, users["fox"]) == [
        {"id": str(roles["Staff"]), "name": "Staff", "scope": "convention"},
        {"id": str(roles["Board"]), "name": "Board", "scope": "global"},
    ]
    assert roles_of(client, auth, users["Zoë"]) == [
        {"id": str(roles["Dealer"]), "name": "Dealer", "scope": "convention"}
    ]
    assert roles_of(client, auth, users["otter"]) == []


def test_put_gives_the_role_once_and_changes_its_scope(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    application, auth = service_app(apps, "user:read user:roles:update")
    otter, dealer = imported.users["otter"], imported.roles["Dealer"]
    path = f"/api/v0/users/{otter}/roles/{dealer}"
    given = {"id": str(dealer), "name": "Dealer", "scope": "global"}

    response = client.put(path, json={"scope": "global"}, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json() == given
    assert roles_of(client, auth, otter) == [given]
    [assigned] = audit_events(engine, "user.role_assigned")
    assert assigned.actor == f"app:{application.client_id}"
    assert (assigned.target_type, assigned.target_id) == ("user", str(otter))

    # The same again: nothing changes and nothing is recorded.
    response = client.put(path, json={"scope": "global"}, headers=auth)
    assert (response.status_code, response.json()) == (200, given)
    assert roles_of(client, auth, otter) == [given]
    assert len(audit_events(engine, "user.role_assigned")) == 1

    response = client.put(path, json={"scope": "convention"}, headers=auth)
    assert (response.status_code, response.json()) == (200, {**given, "scope": "convention"})
    assert roles_of(client, auth, otter) == [{**given, "scope": "convention"}]
    assert len(audit_events(engine, "user.role_assigned")) == 2
    assert audit_events(engine, "user.role_removed") == []


def test_put_without_a_scope_gives_the_role_for_this_convention(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read user:roles:update")
    otter, roles = imported.users["otter"], imported.roles
    assert client.put(f"/api/v0/users/{otter}/roles/{roles['Staff']}", headers=auth).json() == {
        "id": str(roles["Staff"]),
        "name": "Staff",
        "scope": "convention",
    }
    response = client.put(f"/api/v0/users/{otter}/roles/{roles['Board']}", json={}, headers=auth)
    assert response.json()["scope"] == "convention"
    assert [role["scope"] for role in roles_of(client, auth, otter)] == ["convention"] * 2


def test_put_with_a_bad_scope_is_refused(client: TestClient, apps: Apps, engine: Engine) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read user:roles:update")
    otter = imported.users["otter"]
    path = f"/api/v0/users/{otter}/roles/{imported.roles['Staff']}"
    for scope in ["Global", "event", "", None, 1, ["global"]]:
        response = client.put(path, json={"scope": scope}, headers=auth)
        assert list(validation_fields(response)) == ["scope"], scope
    response = client.put(path, json={"scope": "global", "until": "2027"}, headers=auth)
    assert list(validation_fields(response)) == ["until"]
    response = client.put(path, content=b"scope=global", headers=auth)
    assert list(validation_fields(response)) == ["body"]
    assert roles_of(client, auth, otter) == []
    assert audit_events(engine, "user.role_assigned") == []


def test_an_unknown_role_or_user_is_not_found(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read user:roles:update")
    otter, staff = imported.users["otter"], imported.roles["Staff"]
    for role_id in ["999", "abc", "-1", "1.0", str(2**31), "9" * 30]:
        for method in ("PUT", "DELETE"):
            response = client.request(
                method, f"/api/v0/users/{otter}/roles/{role_id}", headers=auth
            )
            assert_not_found(response, "Role not found.")
    for user_id in ["999", "abc", str(2**31)]:
        for method in ("PUT", "DELETE"):
            response = client.request(
                method, f"/api/v0/users/{user_id}/roles/{staff}", headers=auth
            )
            assert_not_found(response, "User not found.")
    assert audit_events(engine, "user.role_assigned") == []


def test_delete_takes_the_role_away_and_again_is_harmless(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    application, auth = service_app(apps, "user:read user:roles:update")
    fox, staff, board = imported.users["fox"], imported.roles["Staff"], imported.roles["Board"]

    response = client.delete(f"/api/v0/users/{fox}/roles/{staff}", headers=auth)
    assert (response.status_code, response.content) == (204, b"")
    assert roles_of(client, auth, fox) == [{"id": str(board), "name": "Board", "scope": "global"}]
    [removed] = audit_events(engine, "user.role_removed")
    assert removed.actor == f"app:{application.client_id}"
    assert (removed.target_type, removed.target_id) == ("user", str(fox))

    response = client.delete(f"/api/v0/users/{fox}/roles/{staff}", headers=auth)
    assert (response.status_code, response.content) == (204, b"")
    assert len(roles_of(client, auth, fox)) == 1
    assert len(audit_events(engine, "user.role_removed")) == 1


def test_reading_users_is_not_enough_to_change_roles(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read")
    fox, otter, staff = imported.users["fox"], imported.users["otter"], imported.roles["Staff"]
    for method, user in (("PUT", otter), ("DELETE", fox)):
        response = client.request(method, f"/api/v0/users/{user}/roles/{staff}", headers=auth)
        assert response.status_code == 403, response.text
        assert response.json()["errors"]["access"]["permissions"] == ["user:roles:update"]
    assert len(roles_of(client, auth, fox)) == 2
    assert roles_of(client, auth, otter) == []
    assert audit_events(engine, "user.role_assigned") == []
    assert audit_events(engine, "user.role_removed") == []


def test_role_list_pages_with_query_parameters(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    load_small_demo(engine, users=20, volunteers=0)  # ten roles
    auth = headers(apps, "user:read")
    everything = client.get(ROLES, params={"limit": 1000}, headers=auth).json()
    assert len(everything["data"]) == 10
    assert everything["nextPage"] is None
    assert [role["id"] for role in everything["data"]] == [str(n) for n in range(1, 11)]
    assert client.get(ROLES, headers=auth).json() == everything  # default 100

    pages, cursor = [], None
    while True:
        params: dict[str, str | int] = {"limit": 3}
        if cursor is not None:
            params["nextPage"] = cursor
        page = client.get(ROLES, params=params, headers=auth).json()
        assert page["hasMore"] is isinstance(page["nextPage"], str)
        pages.append(page["data"])
        cursor = page["nextPage"]
        if cursor is None:
            break
    assert [len(page) for page in pages] == [3, 3, 3, 1]
    assert [role for page in pages for role in page] == everything["data"]

    for limit in ["0", "1001", "-1", "1.5", "abc", "", "true"]:
        response = client.get(ROLES, params={"limit": limit}, headers=auth)
        assert list(validation_fields(response)) == ["limit"], limit
    first = client.get(ROLES, params={"limit": 3}, headers=auth).json()["nextPage"]
    users_cursor = client.post("/api/v0/users/search", json={"limit": 3}, headers=auth).json()[
        "nextPage"
    ]
    for bad in [first[:-1], first + "x", "garbage", users_cursor]:
        response = client.get(ROLES, params={"nextPage": bad}, headers=auth)
        assert list(validation_fields(response)) == ["nextPage"], bad
