"""GET /api/users/current (api.md 2.4, 4.8; decisions.md, Resources: current user)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from tests.api.support import app_engine, statements
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.transfer.support import import_

DOCUMENT = {
    "event": {"name": "RegCon 2027", "current": True},
    "roles": [{"name": "Staff", "staff": True}, {"name": "Dealer"}],
    "users": [
        {
            "username": "fox",
            "email": "Fox@Example.org",
            "firstName": "Fae",
            "lastName": "Fox",
            "preferredName": "Foxy",
            "phone": "+15555550123",
            "verified": True,
            "identityVerified": False,
            "bornAt": "1990-01-02",
            "newsletter": True,
            "profilePictureUrl": "https://example.org/fox.png",
            "address": {
                "addressLine1": "1 Main St",
                "addressLine2": "Apt 2",
                "addressCity": "Reno",
                "addressState": "NV",
                "addressZipcode": "89501",
                "addressCountry": "US",
            },
            "roles": ["Dealer", {"name": "Staff", "scope": "global"}],
            "permissions": ["volunteer:read"],
        },
        {"username": "owl", "email": "owl@example.org", "firstName": "O", "lastName": "Wl"},
    ],
    "departments": [{"name": "Security", "email": "s@example.org", "leads": ["fox"]}],
    "volunteers": [{"user": "fox"}],
}

BASIC = {
    "sub",
    "username",
    "firstName",
    "lastName",
    "preferredName",
    "emailVerified",
    "bornAt",
    "newsletter",
    "identityVerified",
    "isVolunteer",
    "isDepartmentLead",
    "userRoles",
    "permissions",
    "profilePictureUrl",
    "id",
}
ADDRESS = {
    "addressLine1",
    "addressLine2",
    "addressCity",
    "addressState",
    "addressZipcode",
    "addressCountry",
}


def current(client: TestClient, apps: Apps, engine: Engine, scope: str, user: str = "fox") -> dict:
    ids = import_(engine, DOCUMENT).as_json()
    token = apps.mint(apps.register(obo_scopes=scope), scope, user_id=int(ids["users"][user]))
    answer = client.get("/api/users/current", headers=bearer(token))
    assert answer.status_code == 200, answer.text
    record: dict = answer.json()
    return record


def test_the_whole_record_with_every_scope(client: TestClient, apps: Apps, engine: Engine) -> None:
    record = current(client, apps, engine, "pii:basic pii:email pii:phone pii:address")
    fox_id = record["id"]
    assert isinstance(fox_id, int)
    assert record == {
        "id": fox_id,
        "sub": str(fox_id),
        "username": "fox",
        "firstName": "Fae",
        "lastName": "Fox",
        "preferredName": "Foxy",
        "email": "Fox@example.org",
        "emailVerified": True,
        "phone": "+15555550123",
        "addressLine1": "1 Main St",
        "addressLine2": "Apt 2",
        "addressCity": "Reno",
        "addressState": "NV",
        "addressZipcode": "89501",
        "addressCountry": "US",
        "bornAt": "1990-01-02T00:00:00.000Z",
        "newsletter": True,
        "identityVerified": False,
        "isVolunteer": True,
        "isDepartmentLead": True,
        "userRoles": [
            {"id": record["userRoles"][0]["id"], "name": "Staff"},
            {"id": record["userRoles"][1]["id"], "name": "Dealer"},
        ],
        "permissions": ["volunteer:read"],
        "profilePictureUrl": "https://example.org/fox.png",
    }


@pytest.mark.parametrize(
    ("extra", "present"),
    [
        ("", set()),
        ("pii:email", {"email"}),
        ("pii:phone", {"phone"}),
        ("pii:address", ADDRESS),
    ],
    ids=["basic", "email", "phone", "address"],
)
def test_restricted_attributes_are_absent_without_their_scope(
    client: TestClient, apps: Apps, engine: Engine, extra: str, present: set[str]
) -> None:
    record = current(client, apps, engine, f"pii:basic {extra}".strip())
    assert set(record) == BASIC | present


def test_a_plain_attendee(client: TestClient, apps: Apps, engine: Engine) -> None:
    record = current(client, apps, engine, "pii:basic pii:address", user="owl")
    assert record["isVolunteer"] is False
    assert record["isDepartmentLead"] is False
    assert record["userRoles"] == []
    assert record["permissions"] == []
    assert record["bornAt"] is None
    assert all(record[name] is None for name in ADDRESS)


def test_only_a_users_token_with_pii_basic(client: TestClient, apps: Apps, engine: Engine) -> None:
    ids = import_(engine, DOCUMENT).as_json()
    fox = int(ids["users"]["fox"])
    email_only = apps.mint(apps.register(obo_scopes="pii:email"), "pii:email", user_id=fox)
    service = apps.service_token("user:read volunteer:read")
    for token in (email_only, service):
        answer = client.get("/api/users/current", headers=bearer(token))
        assert answer.status_code == 403
        assert answer.json()["errors"]["access"]["permissions"] == ["pii:basic"]


@pytest.mark.parametrize(
    "stored",
    ["javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "http://evil.example/x"],
)
def test_a_stored_picture_url_that_breaks_the_rule_is_null(
    client: TestClient, apps: Apps, engine: Engine, stored: str
) -> None:
    """CWE-79, defence in depth: a URL the importer would refuse, stored before the rule or by
    SQL typed by hand, never reaches an OBO client's `<img src>`."""
    ids = import_(engine, DOCUMENT).as_json()
    fox = int(ids["users"]["fox"])
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE users SET profile_picture_url = :url WHERE id = :id"),
            {"url": stored, "id": fox},
        )
    token = apps.mint(apps.register(obo_scopes="pii:basic"), "pii:basic", user_id=fox)
    answer = client.get("/api/users/current", headers=bearer(token))
    assert answer.status_code == 200, answer.text
    assert answer.json()["profilePictureUrl"] is None


RECORD_TABLES = ("FROM users", "volunteers", "department_leads", "user_roles", "user_permissions")


def test_the_record_is_one_read_however_much_the_user_holds(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """The record (the user, the two facts, roles and permissions) is one statement beside the
    token's: fox holds two roles, a permission, an application and a lead; owl nothing."""
    ids = import_(engine, DOCUMENT).as_json()
    application = apps.register(obo_scopes="pii:basic")
    sent: dict[str, list[str]] = {}
    for user in ("fox", "owl"):
        token = apps.mint(application, "pii:basic", user_id=int(ids["users"][user]))
        with statements(app_engine(client)) as seen:
            assert client.get("/api/users/current", headers=bearer(token)).status_code == 200
        sent[user] = [str(statement) for statement, _ in seen]
    for user, seen in sent.items():
        assert len(seen) == 2, (user, seen)  # the token's read and the record's
        token_read, record_read = seen
        assert "FROM oauth_access_tokens" in token_read, user
        assert all(table in record_read for table in RECORD_TABLES), (user, record_read)


def test_a_change_however_made_shows_in_the_very_next_answer(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    """Answers are kept by the rows they were made from: SQL typed by hand (a name, a role
    taken, leading given up) shows at the next request, as does the same change undone."""
    ids = import_(engine, DOCUMENT).as_json()
    fox = int(ids["users"]["fox"])
    token = apps.mint(apps.register(obo_scopes="pii:basic"), "pii:basic", user_id=fox)

    def answer() -> dict:
        got = client.get("/api/users/current", headers=bearer(token))
        assert got.status_code == 200, got.text
        record: dict = got.json()
        return record

    before = answer()
    assert answer() == before
    changes = (
        "UPDATE users SET first_name = 'Fern' WHERE id = :id",
        "DELETE FROM user_roles WHERE user_id = :id",
        "DELETE FROM department_leads WHERE user_id = :id",
    )
    with engine.begin() as connection:
        for change in changes:
            connection.execute(text(change), {"id": fox})
    after = answer()
    assert (after["firstName"], after["userRoles"], after["isDepartmentLead"]) == (
        "Fern",
        [],
        False,
    )
    with engine.begin() as connection:
        connection.execute(text("UPDATE users SET first_name = 'Fae' WHERE id = :id"), {"id": fox})
    assert answer()["firstName"] == "Fae"
