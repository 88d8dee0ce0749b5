"""The authorization request's OpenID parameters (oidc.md): every `prompt` value, `max_age`,
`login_hint`, and `ui_locales` accepted and ignored."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import Engine, update

from regdesk.web.models import WebSession
from tests.client import TestClient
from tests.oidc.support import (
    CALLBACK,
    World,
    authorize_params,
    consent,
    exchange,
    seed,
    verified_claims,
)
from tests.web.support import PASSWORD, form, query, signed_in


@pytest.fixture
def world(engine: Engine) -> World:
    return seed(engine)


def ask(client: TestClient, world: World, scope: str = "openid email", **extra: str):  # type: ignore[no-untyped-def]
    return client.get(
        "/oauth/authorize",
        params=authorize_params(world.app, scope, **extra),
        follow_redirects=False,
    )


def error_of(response) -> str:  # type: ignore[no-untyped-def]
    location = response.headers["location"]
    assert location.startswith(CALLBACK), location
    found = query(location)
    assert found["state"] == ["st"]
    assert found["iss"] == ["https://testserver"]
    return found["error"][0]


def sign_in_at_login_page(client: TestClient, response) -> str:  # type: ignore[no-untyped-def]
    """From a redirect to /login: sign in there; where the login form sends the browser."""
    assert urlsplit(response.headers["location"]).path == "/login"
    page = client.get(response.headers["location"])
    fields = form(page.text, "/login").fields
    fields.update(username="fox", password=PASSWORD)
    answer = client.post("/login", data=fields, follow_redirects=False)
    assert answer.status_code == 303
    location: str = answer.headers["location"]
    return location


def age_sessions(engine: Engine, seconds: int) -> None:
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    with engine.begin() as connection:
        connection.execute(update(WebSession).values(created_at=earlier))


# --- prompt=none ---------------------------------------------------------------------------


def test_prompt_none_without_a_session_is_login_required(client: TestClient, world: World) -> None:
    assert error_of(ask(client, world, prompt="none")) == "login_required"


def test_prompt_none_without_a_grant_is_consent_required(client: TestClient, world: World) -> None:
    signed_in(client)
    assert error_of(ask(client, world, prompt="none")) == "consent_required"


def test_prompt_none_with_a_grant_answers_at_once(client: TestClient, world: World) -> None:
    signed_in(client)
    exchange(client, world.app, consent(client, world.app, "openid email"))  # the grant
    silent = ask(client, world, prompt="none")
    assert silent.status_code == 302
    assert "code" in query(silent.headers["location"])
    # Beyond what was granted: consent_required, never a page.
    assert error_of(ask(client, world, "openid email phone", prompt="none")) == "consent_required"


def test_prompt_none_cannot_go_with_another_value(client: TestClient, world: World) -> None:
    signed_in(client)
    assert error_of(ask(client, world, prompt="none login")) == "invalid_request"
    assert error_of(ask(client, world, prompt="sideways")) == "invalid_request"


def test_prompt_none_when_the_user_cannot_grant_is_consent_required(
    client: TestClient, engine: Engine
) -> None:
    world = seed(engine, obo_scopes="openid user:read")
    signed_in(client)  # fox holds no user:read permission
    assert ask(client, world, "openid user:read").status_code == 400  # the page, normally
    assert error_of(ask(client, world, "openid user:read", prompt="none")) == "consent_required"


# --- prompt=login, max_age, login_hint ------------------------------------------------------


def test_prompt_login_signs_in_again_even_with_a_session(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    age_sessions(engine, 600)
    first = ask(client, world, prompt="login")
    back = sign_in_at_login_page(client, first)
    assert urlsplit(back).path == "/oauth/authorize"
    assert "prompt" not in parse_qs(urlsplit(back).query)  # or it would ask forever
    page = client.get(back)
    assert page.status_code == 200
    assert "Authorize" in page.text
    fields = form(page.text, "/oauth/authorize").fields
    answer = client.post(
        "/oauth/authorize", data={**fields, "decision": "authorize"}, follow_redirects=False
    )
    code = query(answer.headers["location"])["code"][0]
    # A session of its own, just begun: auth_time says so.
    claims = verified_claims(client, exchange(client, world.app, code)["id_token"])
    assert claims["auth_time"] >= dt.datetime.now(dt.UTC).timestamp() - 60


def test_prompt_login_consent_keeps_consent(client: TestClient, world: World) -> None:
    signed_in(client)
    back = sign_in_at_login_page(client, ask(client, world, prompt="login consent"))
    assert parse_qs(urlsplit(back).query)["prompt"] == ["consent"]


def test_max_age_signs_in_again_when_the_sign_in_is_older(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    assert ask(client, world, max_age="3600").status_code == 200  # recent enough: consent
    age_sessions(engine, 7200)
    older = ask(client, world, max_age="3600")
    assert older.status_code == 303
    back = sign_in_at_login_page(client, older)
    assert "max_age" not in parse_qs(urlsplit(back).query)
    assert client.get(back).status_code == 200
    assert error_of(ask(client, world, max_age="soon")) == "invalid_request"


def test_max_age_with_prompt_none_is_login_required(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    age_sessions(engine, 7200)
    assert error_of(ask(client, world, prompt="none", max_age="60")) == "login_required"


def test_login_hint_fills_in_the_username(client: TestClient, world: World) -> None:
    to_login = ask(client, world, login_hint="fox@example.org")
    page = client.get(to_login.headers["location"])
    assert form(page.text, "/login").fields["username"] == "fox@example.org"


# --- prompt=consent, ui_locales ---------------------------------------------------------------


def test_prompt_consent_asks_again_even_when_granted(client: TestClient, world: World) -> None:
    signed_in(client)
    consent(client, world.app, "openid email")
    again = ask(client, world, prompt="consent")
    assert again.status_code == 200
    assert form(again.text, "/oauth/authorize")


def test_select_account_and_ui_locales_are_accepted(client: TestClient, world: World) -> None:
    signed_in(client)
    assert ask(client, world, prompt="select_account", ui_locales="fr-CA fr en").status_code == 200


def test_the_openid_scopes_are_shown_in_the_words_of_their_twins(
    client: TestClient, world: World
) -> None:
    signed_in(client)
    page = ask(client, world, "openid profile email phone address groups").text
    for words in (
        "See your name, username and basic profile",
        "See your e-mail address",
        "See your phone number",
        "See your postal address",
        "See the names of your roles",
    ):
        assert words in page
