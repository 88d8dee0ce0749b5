"""The authorization request in the browser (api.md 4.1, 5.1; decisions.md, Errors)."""

from __future__ import annotations

import hashlib
import html
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine, delete, select, update

from regdesk.oauth.models import Application, AuthorizationCode, UserPermission
from regdesk.oauth.scopes import SCOPES
from tests.client import TestClient
from tests.conftest import Registered
from tests.web.support import (
    APP_DESCRIPTION,
    APP_NAME,
    CALLBACK,
    ISSUER,
    audit,
    authorize_params,
    form,
    forms,
    log_in,
    make_user,
    query,
    register_app,
)

NOTICE = "This grants administrative permission"
# ~1024 characters with what real clients put in a state, and percent signs of its own.
LONG_STATE = ("v1|/cb:a-b_c%20d%2F~.!*'()=&+" * 40)[:1024]


@pytest.fixture
def registered(engine: Engine) -> Registered:
    return register_app(engine)


def consent_page(
    client: TestClient, registered: Registered, scope: str, state: str | None = "xyz"
) -> str:
    page = client.get("/oauth/authorize", params=authorize_params(registered, scope, state=state))
    assert page.status_code == 200, page.text
    text: str = page.text
    return text


def answer(client: TestClient, page: str, decision: str) -> str:
    """Press a button of the consent form; the Location the browser is sent to."""
    fields = {**form(page, "/oauth/authorize").fields, "decision": decision}
    response = client.post("/oauth/authorize", data=fields, follow_redirects=False)
    assert response.status_code == 303, response.text
    location: str = response.headers["location"]
    return location


def assert_error_page(response: object, *texts: str) -> None:
    assert getattr(response, "status_code", None) == 400
    assert "location" not in response.headers  # type: ignore[attr-defined]
    page = html.unescape(response.text)  # type: ignore[attr-defined]
    assert "<h1>Invalid request</h1>" in page
    for text in texts:
        assert text in page


# --- requests that are refused before anyone signs in ------------------------------------


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
def test_an_unknown_client_gets_an_error_page_never_a_redirect(
    client: TestClient, engine: Engine, registered: Registered, signed_in: bool
) -> None:
    make_user(engine)
    if signed_in:
        log_in(client)
    for client_id in ("999", "abc", "", "1 ", "-1", "99999999999999999999"):
        params = {**authorize_params(registered), "client_id": client_id}
        response = client.get("/oauth/authorize", params=params, follow_redirects=False)
        assert_error_page(response, "The application is unknown or suspended.")


def test_a_suspended_client_gets_an_error_page(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    with engine.begin() as connection:
        connection.execute(update(Application).values(suspended=True))
    response = client.get(
        "/oauth/authorize", params=authorize_params(registered), follow_redirects=False
    )
    assert_error_page(response)


def test_an_unregistered_redirect_uri_gets_an_error_page(
    client: TestClient, registered: Registered
) -> None:
    for redirect_uri in (
        "https://app.example/cb/extra",
        "https://app.example/cb?x=1",
        "https://app.example/c",
        "https://app.example/cb/",
        "https://APP.example/cb",
        "http://app.example/cb",
        "https://app.example:443/cb",
        "https://app.example/cb#frag",
        "https://evil.example/cb",
        "",
    ):
        params = authorize_params(registered, redirect_uri=redirect_uri)
        response = client.get("/oauth/authorize", params=params, follow_redirects=False)
        assert_error_page(response, "The redirect address is not one registered")
        assert "evil" not in response.text


def test_a_missing_redirect_uri_gets_an_error_page(
    client: TestClient, registered: Registered
) -> None:
    params = authorize_params(registered)
    del params["redirect_uri"]
    assert_error_page(client.get("/oauth/authorize", params=params, follow_redirects=False))


def test_other_problems_go_back_to_the_application_with_state_and_iss(
    client: TestClient, registered: Registered
) -> None:
    # Not signed in: the application hears of its mistake without the user logging in first.
    for change, error in (
        ({"scope": "pii:basic no:such"}, "invalid_scope"),
        ({"scope": "pii:phone"}, "invalid_scope"),  # not one the application may ask for
        ({"scope": ""}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge_method": "plain", "code_challenge": "x" * 43}, "invalid_request"),
    ):
        params = {**authorize_params(registered, state="s|1/2"), **change}
        response = client.get("/oauth/authorize", params=params, follow_redirects=False)
        assert response.status_code == 302, change
        location = response.headers["location"]
        assert location.startswith(CALLBACK + "?")
        reply = query(location)
        assert reply["error"] == [error]
        assert reply["state"] == ["s|1/2"]
        assert reply["iss"] == [ISSUER]


# --- signing in on the way ---------------------------------------------------------------


def test_a_visitor_not_signed_in_logs_in_and_comes_back(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    params = authorize_params(registered, "pii:basic pii:email", state=LONG_STATE)
    response = client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert response.status_code == 303
    login_at = response.headers["location"]
    assert urlsplit(login_at).path == "/login"
    [next_] = query(login_at)["next"]
    assert next_.startswith("/oauth/authorize?")
    page = client.get(login_at)
    assert form(page.text, "/login").fields["next"] == next_
    back = log_in(client, next_=next_)
    assert back.headers["location"] == next_
    consent = client.get(back.headers["location"])
    assert consent.status_code == 200
    assert APP_NAME in consent.text
    assert query(answer(client, consent.text, "authorize"))["state"] == [LONG_STATE]


# --- the consent screen ------------------------------------------------------------------


def test_the_consent_screen_names_the_application_and_each_scope_in_plain_words(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    log_in(client)
    page = consent_page(client, registered, "pii:basic pii:email")
    assert APP_NAME in page
    assert APP_DESCRIPTION in page
    for scope in ("pii:basic", "pii:email"):
        assert SCOPES[scope].description in page
    assert SCOPES["pii:phone"].description not in page
    assert NOTICE not in page
    assert "scope-sensitive" not in page
    buttons = form(page, "/oauth/authorize").buttons
    assert [(b["text"], b["value"]) for b in buttons] == [
        ("Authorize", "authorize"),
        ("Deny", "deny"),
    ]
    assert "danger" not in buttons[0]["class"].split()
    assert "primary" in buttons[0]["class"].split()
    assert '<input type="checkbox"' not in page  # all or nothing (api.md 4.1)


@pytest.mark.parametrize("permission", ["user:read", "admin"])
def test_a_sensitive_scope_is_red_with_a_notice_and_a_red_button(
    client: TestClient, engine: Engine, registered: Registered, permission: str
) -> None:
    make_user(engine, permissions=[permission])
    log_in(client)
    page = consent_page(client, registered, "pii:basic user:read")
    assert NOTICE in page
    words = " ".join(html.unescape(page).split())
    assert "access to administrative endpoints or to other users' information" in words
    assert '<li class="scope scope-sensitive">' in page
    assert page.count("scope-sensitive") == 1  # pii:basic is not marked
    authorize_button = form(page, "/oauth/authorize").buttons[0]
    assert authorize_button["text"] == "Authorize"
    assert "danger" in authorize_button["class"].split()


def test_a_user_without_the_permission_of_a_sensitive_scope_gets_an_invalid_request_page(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine, permissions=["volunteer:read"])
    log_in(client)
    params = authorize_params(registered, "pii:basic user:read")
    response = client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert_error_page(response, "user:read", SCOPES["user:read"].description)
    assert "pii:basic" not in response.text
    assert "/oauth/authorize" not in [f.action for f in forms(response.text)]


def test_the_permission_is_checked_again_when_the_answer_comes(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    user_id = make_user(engine, permissions=["user:read"])
    log_in(client)
    page = consent_page(client, registered, "user:read")
    with engine.begin() as connection:
        connection.execute(delete(UserPermission).where(UserPermission.user_id == user_id))
    fields = {**form(page, "/oauth/authorize").fields, "decision": "authorize"}
    response = client.post("/oauth/authorize", data=fields, follow_redirects=False)
    assert_error_page(response, "user:read")
    with engine.connect() as connection:
        assert connection.scalars(select(AuthorizationCode.id)).all() == []


# --- the answer --------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["xyz", LONG_STATE, "line\nbreak\r\nand tab\t", None])
def test_authorize_sends_a_code_the_state_as_sent_and_iss(
    client: TestClient, engine: Engine, registered: Registered, state: str | None
) -> None:
    user_id = make_user(engine)
    log_in(client)
    page = consent_page(client, registered, "pii:basic pii:email", state=state)
    location = answer(client, page, "authorize")
    assert location.startswith(CALLBACK + "?")
    reply = query(location)
    [code] = reply["code"]
    assert reply.get("state") == ([state] if state is not None else None)
    assert reply["iss"] == [ISSUER]
    assert "error" not in reply
    with engine.connect() as connection:
        stored = connection.execute(select(AuthorizationCode)).one()
    assert stored.code_hash == hashlib.sha256(code.encode()).hexdigest()
    assert stored.user_id == user_id
    assert stored.scope == "pii:basic pii:email"
    [event] = audit(engine, "oauth.consent_granted")
    assert event.actor_user_id == user_id


def test_deny_sends_access_denied_with_state_and_iss(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    log_in(client)
    page = consent_page(client, registered, "pii:basic", state=LONG_STATE)
    reply = query(answer(client, page, "deny"))
    assert reply["error"] == ["access_denied"]
    assert reply["state"] == [LONG_STATE]
    assert reply["iss"] == [ISSUER]
    assert "code" not in reply
    with engine.connect() as connection:
        assert connection.scalars(select(AuthorizationCode.id)).all() == []
    assert len(audit(engine, "oauth.consent_denied")) == 1


def test_the_answer_is_checked_again_like_the_request(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    log_in(client)
    page = consent_page(client, registered, "pii:basic")
    fields = form(page, "/oauth/authorize").fields
    tampered = fields["authorization_request"].replace("app.example%2Fcb", "evil.example%2Fcb")
    assert tampered != fields["authorization_request"]
    response = client.post(
        "/oauth/authorize",
        data={**fields, "authorization_request": tampered, "decision": "authorize"},
        follow_redirects=False,
    )
    assert_error_page(response)


def test_an_answer_after_the_session_ended_asks_to_log_in_again(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    log_in(client)
    page = consent_page(client, registered, "pii:basic")
    client.cookies.delete("regdesk_session")
    fields = {**form(page, "/oauth/authorize").fields, "decision": "authorize"}
    response = client.post("/oauth/authorize", data=fields, follow_redirects=False)
    assert response.status_code == 303
    [next_] = query(response.headers["location"])["next"]
    assert next_.startswith("/oauth/authorize?client_id=")
    with engine.connect() as connection:
        assert connection.scalars(select(AuthorizationCode.id)).all() == []
