"""Get user and search users (api.md 2.2, 4.6, 4.7; decisions.md, Search filters)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from tests.api.support import (
    RICH_USERS,
    assert_not_found,
    headers,
    import_rich,
    validation_fields,
)
from tests.client import TestClient
from tests.conftest import Apps
from tests.transfer.support import import_

SEARCH = "/api/v0/users/search"
USER_KEYS = {
    "id",
    "email",
    "preferredName",
    "firstName",
    "lastName",
    "username",
    "verified",
    "phone",
    "address",
}
ADDRESS_KEYS = {
    "addressLine1",
    "addressLine2",
    "addressCity",
    "addressState",
    "addressZipcode",
    "addressCountry",
}


def found(client: TestClient, auth: dict[str, str], filter: dict[str, Any]) -> list[str]:
    """The usernames a filtered search finds (one page is enough for the rich document)."""
    response = client.post(SEARCH, json={"filter": filter}, headers=auth)
    assert response.status_code == 200, response.text
    page = response.json()
    assert page["nextPage"] is None
    assert page["hasMore"] is False
    return [user["username"] for user in page["data"]]


def test_get_user_renders_every_field_of_every_imported_user(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    imported = import_rich(engine)
    auth = headers(apps, "user:read")
    assert set(imported.users) == set(RICH_USERS)
    for username, user_id in imported.users.items():
        response = client.get(f"/api/v0/users/{user_id}", headers=auth)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        user = response.json()
        assert set(user) == USER_KEYS, username
        assert set(user["address"]) == ADDRESS_KEYS, username
        assert user["id"] == str(user_id)
        assert user == RICH_USERS[username], username


def test_search_without_filter_lists_every_user_as_get_user_renders_them(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    response = client.post(SEARCH, json={}, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "data": list(RICH_USERS.values()),
        "nextPage": None,
        "hasMore": False,
    }


def test_a_path_id_that_names_no_user_is_user_not_found(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read volunteer:read")
    # decisions.md: a path id that is not a decimal integer, or names no record, is a 404.
    ids = ["5", "0", "999999", "abc", "-1", "1.0", "0x10", "%201", "1%20", "+1", "1e0",
           "9" * 18, "1" + "0" * 29, "١٢", "１"]  # fmt: skip
    for user_id in ids:
        for suffix in ("", "/volunteer", "/roles"):
            response = client.get(f"/api/v0/users/{user_id}{suffix}", headers=auth)
            assert response.status_code == 404, (user_id, suffix, response.text)
            assert_not_found(response, "User not found.")


def test_role_id_filter_finds_the_role_holders(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    roles = import_rich(engine).roles
    auth = headers(apps, "user:read")
    assert found(client, auth, {"roleId": roles["Staff"]}) == ["fox"]
    assert found(client, auth, {"roleId": roles["Board"]}) == ["fox"]  # held globally
    assert found(client, auth, {"roleId": roles["Dealer"]}) == ["Zoë"]
    # A number no role has finds nobody, however large (PostgreSQL's ids are 32-bit).
    for nobody in [999, 0, -1, 2**31, 10**20]:
        assert found(client, auth, {"roleId": nobody}) == [], nobody


def test_role_id_filter_is_a_number(client: TestClient, apps: Apps, engine: Engine) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    for role_id in ["1", 1.5, True, [1], {"id": 1}]:
        response = client.post(SEARCH, json={"filter": {"roleId": role_id}}, headers=auth)
        assert list(validation_fields(response)) == ["filter.roleId"], role_id


def test_email_filter_is_exact_and_case_insensitive(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    assert found(client, auth, {"email": "fox@example.org"}) == ["fox"]
    assert found(client, auth, {"email": "FOX@EXAMPLE.ORG"}) == ["fox"]
    assert found(client, auth, {"email": "zoe@Example.ORG"}) == ["Zoë"]
    assert found(client, auth, {"email": "hayao.miyazaki@EXAMPLE.org"}) == ["miyazaki"]
    partials = [
        "fox",
        "fox@",
        "fox@example",
        "ox@example.org",
        "example.org",
        "%",
        "_ox@example.org",
    ]
    for partial in [*partials, ""]:
        assert found(client, auth, {"email": partial}) == [], partial


def test_username_filter_is_exact(client: TestClient, apps: Apps, engine: Engine) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    assert found(client, auth, {"username": "fox"}) == ["fox"]
    assert found(client, auth, {"username": "Zoë"}) == ["Zoë"]
    # "exact", unlike the e-mail's "exact, case-insensitive" (decisions.md): case counts.
    for other in ["FOX", "zoë", "fo", "ox", "f%", "fo_", "", "miyazaki "]:
        assert found(client, auth, {"username": other}) == [], other


def test_filters_find_a_user_by_the_exact_value_they_were_stored_with(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """Capitals outside ASCII: the stored e-mail and username are found as they are."""
    import_(
        engine,
        {
            "users": [
                {
                    "username": "Émile",
                    "email": "Émile.Ørsted@example.org",
                    "firstName": "Émile",
                    "lastName": "Ørsted",
                }
            ]
        },
    )
    auth = headers(apps, "user:read")
    stored = client.get("/api/v0/users/1", headers=auth).json()
    assert (stored["username"], stored["email"]) == ("Émile", "Émile.Ørsted@example.org")
    assert found(client, auth, {"email": "Émile.Ørsted@example.org"}) == ["Émile"]
    assert found(client, auth, {"email": "Émile.Ørsted@EXAMPLE.ORG"}) == ["Émile"]
    assert found(client, auth, {"username": "Émile"}) == ["Émile"]
    assert found(client, auth, {"username": "ÉMILE"}) == []


def test_filter_members_combine_with_and(client: TestClient, apps: Apps, engine: Engine) -> None:
    roles = import_rich(engine).roles
    auth = headers(apps, "user:read")
    assert found(client, auth, {"roleId": roles["Staff"], "email": "fox@example.org"}) == ["fox"]
    assert found(client, auth, {"roleId": roles["Dealer"], "email": "fox@example.org"}) == []
    assert found(client, auth, {"username": "fox", "email": "zoe@example.org"}) == []
    assert found(client, auth, {"username": "Zoë", "email": "ZOE@example.org"}) == ["Zoë"]
    every = {"roleId": roles["Dealer"], "email": "zoe@example.org", "username": "Zoë"}
    assert found(client, auth, every) == ["Zoë"]
    assert found(client, auth, {**every, "username": "fox"}) == []


def test_an_empty_filter_is_no_filter(client: TestClient, apps: Apps, engine: Engine) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    assert found(client, auth, {}) == list(RICH_USERS)
    response = client.post(SEARCH, json={"filter": None}, headers=auth)
    assert [u["username"] for u in response.json()["data"]] == list(RICH_USERS)


def test_an_unknown_filter_member_is_named(client: TestClient, apps: Apps, engine: Engine) -> None:
    import_rich(engine)
    auth = headers(apps, "user:read")
    response = client.post(SEARCH, json={"filter": {"nickname": "fox"}}, headers=auth)
    assert list(validation_fields(response)) == ["filter.nickname"]
    response = client.post(
        SEARCH, json={"filter": {"email": "fox@example.org", "roleid": 1}}, headers=auth
    )
    assert list(validation_fields(response)) == ["filter.roleid"]
    for not_an_object in [[], "fox", 1]:
        response = client.post(SEARCH, json={"filter": not_an_object}, headers=auth)
        assert list(validation_fields(response)) == ["filter"], not_an_object
    for not_a_string in [1, True, ["fox@example.org"]]:
        response = client.post(SEARCH, json={"filter": {"email": not_a_string}}, headers=auth)
        assert list(validation_fields(response)) == ["filter.email"], not_a_string


def test_the_volunteer_sites_lookup_by_email(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """A real client's literal request (decisions.md): one user, found by e-mail."""
    import_rich(engine)
    auth = headers(apps, "user:read")
    response = client.post(
        SEARCH,
        content=b'{"filter": {"email": "zoe@example.org"}, "limit": 1}',
        headers={**auth, "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"data": [RICH_USERS["Zoë"]], "nextPage": None, "hasMore": False}
    response = client.post(
        SEARCH,
        content=b'{"filter": {"email": "nobody@example.org"}, "limit": 1}',
        headers={**auth, "Content-Type": "application/json"},
    )
    assert response.json() == {"data": [], "nextPage": None, "hasMore": False}
