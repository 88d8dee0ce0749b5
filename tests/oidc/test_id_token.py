"""The ID token of the code flow and of refresh (oidc.md, ID token), checked claim by claim,
its signature against the server's own JWKS."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib

import pytest
from sqlalchemy import Engine, select

from regdesk.db import read_session
from regdesk.oauth.models import AuthorizationCode
from regdesk.web.sessions import token_hash
from tests.client import TestClient
from tests.oidc.support import (
    CALLBACK,
    ISSUER,
    World,
    consent,
    exchange,
    header,
    pkce_pair,
    refresh,
    seed,
    verified_claims,
)
from tests.web.support import query, session_cookie, signed_in


@pytest.fixture
def world(engine: Engine) -> World:
    return seed(engine)


def at_hash(access_token: str) -> str:
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def test_the_code_flow_answers_with_an_id_token(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    before = int(dt.datetime.now(dt.UTC).timestamp())
    verifier, challenge = pkce_pair()
    code = consent(
        client,
        world.app,
        nonce="n-0S6_WzA2Mj",
        code_challenge=challenge,
        code_challenge_method="S256",
    )
    tokens = exchange(client, world.app, code, code_verifier=verifier)

    claims = verified_claims(client, tokens["id_token"])
    assert (
        claims["iss"]
        == ISSUER
        == client.get("/.well-known/oauth-authorization-server").json()["issuer"]
    )
    assert claims["sub"] == str(world.fox)
    assert claims["aud"] == claims["azp"] == world.app.client_id
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["at_hash"] == at_hash(tokens["access_token"])
    assert before - 1 <= claims["iat"] <= claims["exp"] - 3600 + 1
    # auth_time: when fox signed in (the session's start), not when the code was made.
    assert before - 5 <= claims["auth_time"] <= claims["iat"]
    cookie = session_cookie(client)
    assert cookie is not None
    assert claims["sid"] == token_hash(f"regdesk sid|{token_hash(cookie)}")
    assert cookie not in tokens["id_token"]
    assert token_hash(cookie) not in claims.values()
    jose = header(tokens["id_token"])
    assert jose["alg"] == "RS256"
    assert jose["kid"] in [key["kid"] for key in client.get("/oauth/jwks").json()["keys"]]


def test_the_claims_are_those_of_the_granted_scopes(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    every = verified_claims(
        client, exchange(client, world.app, consent(client, world.app))["id_token"]
    )
    assert every["name"] == "Fae Fox"
    assert every["given_name"] == "Fae"
    assert every["family_name"] == "Fox"
    assert every["preferred_username"] == "fox"
    assert every["nickname"] == "Foxy"
    assert every["picture"] == "https://example.org/fox.png"
    assert isinstance(every["updated_at"], int)
    assert every["email"] == "fox@example.org"
    assert every["email_verified"] is True
    assert every["phone_number"] == "+17755550123"
    assert every["phone_number_verified"] is False
    assert every["address"] == {
        "street_address": "1 Main St",
        "locality": "Reno",
        "region": "NV",
        "postal_code": "89501",
        "country": "US",
        "formatted": "1 Main St\n89501 Reno\nNV\nUS",
    }
    assert every["groups"] == ["Dealer", "Staff"]

    only = verified_claims(
        client, exchange(client, world.app, consent(client, world.app, "openid"))["id_token"]
    )
    assert not {"name", "email", "phone_number", "address", "groups"} & set(only)
    # A pii:* twin gives its OpenID scope's claims: the user consented to the same words.
    twin = verified_claims(
        client,
        exchange(client, world.app, consent(client, world.app, "openid pii:email"))["id_token"],
    )
    assert twin["email"] == "fox@example.org"
    assert "name" not in twin


def test_no_openid_no_id_token(client: TestClient, engine: Engine, world: World) -> None:
    signed_in(client)
    tokens = exchange(client, world.app, consent(client, world.app, "profile email"))
    assert "id_token" not in tokens


def test_a_refresh_answers_with_a_new_id_token_without_nonce(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    first = exchange(client, world.app, consent(client, world.app, nonce="once"))
    renewed = refresh(client, world.app, first["refresh_token"])
    before, after = (
        verified_claims(client, first["id_token"]),
        verified_claims(client, renewed["id_token"]),
    )
    assert "nonce" not in after
    assert after["at_hash"] == at_hash(renewed["access_token"])
    for same in ("iss", "sub", "aud", "azp", "auth_time", "sid", "email"):
        assert after[same] == before[same], same
    # Narrowed to less than openid: a plain OAuth refresh, no ID token.
    narrowed = client.post(
        "/api/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": renewed["refresh_token"],
            "scope": "email",
        },
        auth=(world.app.client_id, world.app.client_secret),
    ).json()
    assert "id_token" not in narrowed
    assert narrowed["scope"] == "email"


def test_an_es256_application_gets_es256_id_tokens(client: TestClient, engine: Engine) -> None:
    world = seed(engine, id_token_alg="ES256")
    signed_in(client)
    tokens = exchange(client, world.app, consent(client, world.app))
    jose = header(tokens["id_token"])
    assert jose["alg"] == "ES256"
    published = {key["kid"]: key for key in client.get("/oauth/jwks").json()["keys"]}
    assert published[jose["kid"]]["kty"] == "EC"
    assert published[jose["kid"]]["alg"] == "ES256"
    assert verified_claims(client, tokens["id_token"])["sub"] == str(world.fox)


def test_a_nonce_is_refused_while_a_code_carries_it(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    consent(client, world.app, nonce="replayed")
    again = client.get(
        "/oauth/authorize",
        params={
            "client_id": world.app.client_id,
            "response_type": "code",
            "redirect_uri": CALLBACK,
            "scope": "openid",
            "state": "st",
            "nonce": "replayed",
        },
        follow_redirects=False,
    )
    assert again.status_code == 302
    assert query(again.headers["location"])["error"] == ["invalid_request"]
    assert query(again.headers["location"])["state"] == ["st"]
    # Another application's code does not hold this one's nonces; a fresh nonce goes on.
    assert "code" in query(
        client.post(
            "/oauth/authorize",
            data={
                **_consent_fields(client, world, nonce="fresh"),
                "decision": "authorize",
            },
            follow_redirects=False,
        ).headers["location"]
    )


def _consent_fields(client: TestClient, world: World, **extra: str) -> dict[str, str]:
    from tests.oidc.support import authorize_params
    from tests.web.support import form

    page = client.get("/oauth/authorize", params=authorize_params(world.app, "openid", **extra))
    return form(page.text, "/oauth/authorize").fields


def test_without_a_nonce_the_id_token_has_none(
    client: TestClient, engine: Engine, world: World
) -> None:
    signed_in(client)
    tokens = exchange(client, world.app, consent(client, world.app, "openid"))
    assert "nonce" not in verified_claims(client, tokens["id_token"])
    with read_session(engine) as session:
        assert session.scalars(select(AuthorizationCode.nonce)).all() == [None]
