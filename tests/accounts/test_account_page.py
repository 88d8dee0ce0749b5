"""The account page: the user's profile, and the applications they connected, revocable."""

from __future__ import annotations

import html

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.oauth.models import Grant
from regdesk.oauth.scopes import SCOPES
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.oauth.support import assert_oauth_error
from tests.transfer.support import import_
from tests.web.support import (
    APP_NAME,
    CALLBACK,
    PASSWORD,
    audit,
    authorize_params,
    form,
    forms,
    log_in,
    make_user,
    query,
    register_app,
)

CURRENT_USER = "/api/users/current"


def test_a_visitor_not_signed_in_is_sent_to_log_in_first(client: TestClient) -> None:
    response = client.get("/account", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Faccount"


def test_the_profile_is_shown(client: TestClient, engine: Engine) -> None:
    import_(
        engine,
        {
            "users": [
                {
                    "username": "fox",
                    "email": "fox@example.org",
                    "firstName": "Fae",
                    "lastName": "Fox",
                    "preferredName": "Foxy <b>",
                    "phone": "+15555550123",
                    "password": PASSWORD,
                    "address": {
                        "addressLine1": "1 Main St",
                        "addressLine2": "Apt 2",
                        "addressCity": "Reno",
                        "addressState": "NV",
                        "addressZipcode": "89501",
                        "addressCountry": "US",
                    },
                }
            ]
        },
    )
    log_in(client)
    page = client.get("/account")
    assert page.status_code == 200
    assert "Foxy &lt;b&gt;" in page.text  # escaped, never markup
    text = html.unescape(page.text)
    for shown in (
        "Fae Fox",
        "Foxy <b>",
        "fox@example.org",
        "+15555550123",
        "1 Main St",
        "Apt 2",
        "Reno, NV 89501",
    ):
        assert shown in text
    assert '<h2 id="applications-heading">Connected applications</h2>' in page.text
    assert "No application has access to your account." in page.text


def test_a_user_without_an_address_sees_no_address(client: TestClient, engine: Engine) -> None:
    make_user(engine)
    log_in(client)
    page = client.get("/account").text
    assert "<dt>Address</dt>" not in page
    assert "<dt>Phone</dt>" not in page


def test_connected_applications_are_listed_with_their_scopes_and_revoked(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    user_id = make_user(engine, permissions=["user:read"])
    make_user(engine, "owl")
    connected = register_app(engine)
    other = register_app(engine, name="Badge Printer")
    token = apps.mint(connected, "pii:basic user:read", user_id=user_id)
    kept = apps.mint(other, "pii:basic pii:email", user_id=user_id)
    assert client.get(CURRENT_USER, headers=bearer(token)).status_code == 200
    log_in(client)

    page = client.get("/account").text
    assert APP_NAME in page
    assert "Badge Printer" in page
    text = html.unescape(page)
    for scope in ("pii:basic", "user:read", "pii:email"):
        assert SCOPES[scope].description in text
    revoke_forms = [f for f in forms(page) if f.action == "/account/revoke"]
    assert [f.buttons[0]["text"] for f in revoke_forms] == ["Revoke", "Revoke"]
    [mine] = [f for f in revoke_forms if f.fields["application_id"] == connected.client_id]

    response = client.post("/account/revoke", data=mine.fields, follow_redirects=False)
    assert response.status_code == 303
    after = client.get(response.headers["location"])
    assert "access was revoked" in after.text
    assert APP_NAME not in after.text
    assert "Badge Printer" in after.text
    assert client.get(CURRENT_USER, headers=bearer(token)).status_code == 401
    assert client.get(CURRENT_USER, headers=bearer(kept)).status_code == 200
    [event] = audit(engine, "oauth.grant_revoked")
    assert event.actor_user_id == user_id
    assert event.target_id == connected.client_id


def test_revoking_touches_only_the_users_own_grants(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    make_user(engine)
    owl = make_user(engine, "owl")
    shared = register_app(engine)
    theirs = apps.mint(shared, "pii:basic", user_id=owl)
    log_in(client)  # fox, who never connected it
    fields = {
        **form(client.get("/logout").text, "/logout").fields,
        "application_id": shared.client_id,
    }
    response = client.post("/account/revoke", data=fields, follow_redirects=False)
    assert response.status_code == 303
    assert client.get(CURRENT_USER, headers=bearer(theirs)).status_code == 200
    assert audit(engine, "oauth.grant_revoked") == []


def consented_code(client: TestClient, registered: Registered, scope: str = "pii:basic") -> str:
    """The signed-in user authorizes on the consent screen: the code it sends to the client."""
    page = client.get("/oauth/authorize", params=authorize_params(registered, scope)).text
    fields = {**form(page, "/oauth/authorize").fields, "decision": "authorize"}
    location = client.post("/oauth/authorize", data=fields, follow_redirects=False).headers[
        "location"
    ]
    [code] = query(location)["code"]
    return code


def exchange(client: TestClient, registered: Registered, code: str) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK},
        auth=(registered.client_id, registered.client_secret),
    )
    return response


def test_consent_then_code_exchange_then_revoke(client: TestClient, engine: Engine) -> None:
    """The whole road: the consent screen's code becomes tokens; the account page ends them."""
    make_user(engine)
    registered = register_app(engine)
    log_in(client)
    tokens = exchange(client, registered, consented_code(client, registered))
    assert tokens.status_code == 200, tokens.text
    access = tokens.json()["access_token"]
    assert client.get(CURRENT_USER, headers=bearer(access)).json()["username"] == "fox"

    account = client.get("/account").text
    [revoke] = [f for f in forms(account) if f.action == "/account/revoke"]
    client.post("/account/revoke", data=revoke.fields)
    assert client.get(CURRENT_USER, headers=bearer(access)).status_code == 401
    refreshed = client.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"]},
        auth=(registered.client_id, registered.client_secret),
    )
    assert refreshed.status_code == 400
    assert APP_NAME not in client.get("/account").text


def test_a_code_issued_before_the_revocation_is_refused_after_it(
    client: TestClient, engine: Engine
) -> None:
    """RFC 6749 4.1.2, RFC 9700 4.14: revoking ends the codes not yet redeemed too, so the
    application cannot come back with one issued before."""
    make_user(engine)
    registered = register_app(engine)
    log_in(client)
    tokens = exchange(client, registered, consented_code(client, registered)).json()
    pending = consented_code(client, registered)  # authorized again; not yet redeemed
    unknown = exchange(client, registered, "no-such-code")

    [revoke] = [f for f in forms(client.get("/account").text) if f.action == "/account/revoke"]
    assert client.post("/account/revoke", data=revoke.fields).status_code == 200

    refused = exchange(client, registered, pending)
    assert_oauth_error(refused, 400, "invalid_grant")
    assert refused.json() == unknown.json()  # as if it had never been issued
    assert "access_token" not in refused.json()
    assert client.get(CURRENT_USER, headers=bearer(tokens["access_token"])).status_code == 401
    assert APP_NAME not in client.get("/account").text
    with Session(engine) as session:
        assert session.scalars(select(Grant).where(Grant.revoked_at.is_(None))).all() == []
