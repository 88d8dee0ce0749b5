"""`/oauth/logout?client_id=...&next=...`: the session ends; back to the application only at
one of its registered origins (operator.md, Web pages)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select, update

from regdesk.oauth.models import Application
from regdesk.web.models import WebSession
from tests.client import TestClient
from tests.conftest import Registered
from tests.web.support import audit, log_in, make_user, register_app, session_cookie


@pytest.fixture
def registered(engine: Engine) -> Registered:
    return register_app(engine, redirect_uris=["https://app.example/cb"])


def sessions(engine: Engine) -> int:
    with engine.connect() as connection:
        return len(connection.scalars(select(WebSession.id)).all())


def test_returns_to_the_application_at_its_registered_origin(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    user_id = make_user(engine)
    log_in(client)
    response = client.get(
        "/oauth/logout",
        params={"client_id": registered.client_id, "next": "https://app.example/bye?x=1"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "https://app.example/bye?x=1"
    assert session_cookie(client) is None
    assert sessions(engine) == 0
    assert client.get("/account", follow_redirects=False).status_code == 303
    [event] = audit(engine, "user.logout")
    assert event.actor_user_id == user_id


def test_anywhere_else_it_says_signed_out_and_stays(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    make_user(engine)
    for params in (
        {"next": "https://evil.example/"},
        {"next": "https://app.example.evil.example/"},
        {"next": "https://evil.example\\@app.example/"},
        {"next": "http://app.example/"},
        {"next": "//app.example/"},
        {},
        {"client_id": "999", "next": "https://app.example/"},
        {"client_id": "", "next": "https://app.example/"},
    ):
        log_in(client)
        assert sessions(engine) == 1
        response = client.get(
            "/oauth/logout",
            params={"client_id": registered.client_id, **params},
            follow_redirects=False,
        )
        assert response.status_code == 200, params
        assert "location" not in response.headers
        assert "You are signed out" in response.text
        assert "evil" not in response.text
        assert sessions(engine) == 0


def test_a_suspended_application_gets_no_redirect(
    client: TestClient, engine: Engine, registered: Registered
) -> None:
    with engine.begin() as connection:
        connection.execute(update(Application).values(suspended=True))
    params = {"client_id": registered.client_id, "next": "https://app.example/"}
    response = client.get("/oauth/logout", params=params, follow_redirects=False)
    assert response.status_code == 200


def test_a_visitor_not_signed_in_is_sent_back_all_the_same(
    client: TestClient, registered: Registered
) -> None:
    params = {"client_id": registered.client_id, "next": "https://app.example/"}
    response = client.get("/oauth/logout", params=params, follow_redirects=False)
    assert response.headers["location"] == "https://app.example/"
