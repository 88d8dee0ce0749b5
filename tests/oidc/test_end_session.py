"""RP-initiated logout, `/oauth/end-session` (oidc.md, Logout): the session ends; back to the
application only at a post-logout address registered for it, exactly, with `state`."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from tests.client import TestClient
from tests.oidc.support import LOGGED_OUT, World, consent, exchange, register, seed
from tests.web.support import query, session_cookie, signed_in


@pytest.fixture
def world(engine: Engine) -> World:
    return seed(engine)


def id_token(client: TestClient, world: World) -> str:
    token: str = exchange(client, world.app, consent(client, world.app, "openid"))["id_token"]
    return token


def signed_out(client: TestClient) -> bool:
    return client.get("/account", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_registered_address_with_the_id_token_hint(
    client: TestClient, world: World, method: str
) -> None:
    signed_in(client)
    params = {
        "id_token_hint": id_token(client, world),
        "post_logout_redirect_uri": LOGGED_OUT,
        "state": "bye|/x",
    }
    if method == "GET":
        response = client.get("/oauth/end-session", params=params, follow_redirects=False)
    else:
        response = client.post("/oauth/end-session", data=params, follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.split("?")[0] == LOGGED_OUT
    assert query(location)["state"] == ["bye|/x"]
    assert session_cookie(client) is None
    assert signed_out(client)


def test_a_registered_address_with_the_client_id(client: TestClient, world: World) -> None:
    signed_in(client)
    params = {"client_id": world.app.client_id, "post_logout_redirect_uri": LOGGED_OUT}
    response = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert response.headers["location"] == LOGGED_OUT
    assert signed_out(client)


@pytest.mark.parametrize(
    "uri",
    [
        "https://evil.example/logged-out",
        LOGGED_OUT + "/",  # exact match: not a prefix, not the same origin
        LOGGED_OUT + "?next=x",
        "https://rp.example/callback",  # a redirect URI is not a post-logout one
    ],
)
def test_an_unregistered_address_gets_a_page(client: TestClient, world: World, uri: str) -> None:
    signed_in(client)
    params = {"client_id": world.app.client_id, "post_logout_redirect_uri": uri}
    response = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert response.status_code == 200
    assert "location" not in response.headers
    assert "Signed out" in response.text
    assert signed_out(client)


def test_the_address_must_be_registered_for_the_named_application(
    client: TestClient, engine: Engine, world: World
) -> None:
    other = register(engine, name="Forum", post_logout_redirect_uris=["https://forum.example/bye"])
    signed_in(client)
    hint = id_token(client, world)
    cases = [
        # The other application's address, for this one.
        {"client_id": world.app.client_id, "post_logout_redirect_uri": "https://forum.example/bye"},
        # No application named at all.
        {"post_logout_redirect_uri": LOGGED_OUT},
        # The ID token's audience and client_id disagree.
        {
            "id_token_hint": hint,
            "client_id": other.client_id,
            "post_logout_redirect_uri": LOGGED_OUT,
        },
        # A tampered ID token (its payload changed, its signature kept).
        {"id_token_hint": _tampered(hint), "post_logout_redirect_uri": LOGGED_OUT},
        {"id_token_hint": "not.a.token", "post_logout_redirect_uri": LOGGED_OUT},
    ]
    for params in cases:
        response = client.get("/oauth/end-session", params=params, follow_redirects=False)
        assert response.status_code == 200, params
        assert "location" not in response.headers, params


def _tampered(token: str) -> str:
    import base64
    import json

    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["aud"] = "999"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{signature}"


def test_without_a_session_it_still_answers(client: TestClient, world: World) -> None:
    params = {"client_id": world.app.client_id, "post_logout_redirect_uri": LOGGED_OUT}
    response = client.get("/oauth/end-session", params=params, follow_redirects=False)
    assert response.headers["location"] == LOGGED_OUT
    assert client.get("/oauth/end-session").status_code == 200


def test_oauth_logout_keeps_working(client: TestClient, world: World) -> None:
    signed_in(client)
    response = client.get("/oauth/logout", follow_redirects=False)
    assert response.status_code == 200
    assert signed_out(client)
