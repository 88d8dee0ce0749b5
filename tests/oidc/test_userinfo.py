"""`GET`/`POST /oauth/userinfo` (oidc.md): the claims of the token's scopes, `sub` always;
errors as RFC 6750 says, with `WWW-Authenticate`."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.oidc.support import World, consent, exchange, seed
from tests.web.support import signed_in

# Each scope with the claims it adds to `sub`, for fox.
CLAIMS = {
    "openid": {},
    "openid profile": {
        "name": "Fae Fox",
        "given_name": "Fae",
        "family_name": "Fox",
        "preferred_username": "fox",
        "nickname": "Foxy",
        "picture": "https://example.org/fox.png",
    },
    "openid email": {"email": "fox@example.org", "email_verified": True},
    "openid phone": {"phone_number": "+17755550123", "phone_number_verified": False},
    "openid address": {
        "address": {
            "street_address": "1 Main St",
            "locality": "Reno",
            "region": "NV",
            "postal_code": "89501",
            "country": "US",
            "formatted": "1 Main St\n89501 Reno\nNV\nUS",
        }
    },
    "openid groups": {"groups": ["Dealer", "Staff"]},
}


@pytest.fixture
def world(engine: Engine) -> World:
    return seed(engine)


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("scope", list(CLAIMS))
def test_userinfo_gives_the_claims_of_each_scope(
    client: TestClient, world: World, scope: str, method: str
) -> None:
    signed_in(client)
    token = exchange(client, world.app, consent(client, world.app, scope))["access_token"]
    response = client.request(method, "/oauth/userinfo", headers=bearer(token))
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    claims = response.json()
    claims.pop("updated_at", None) if "profile" in scope else None
    assert claims == {"sub": str(world.fox), **CLAIMS[scope]}


def test_a_user_without_a_claim_has_it_left_out(client: TestClient, world: World) -> None:
    signed_in(client, "owl")
    token = exchange(client, world.app, consent(client, world.app))["access_token"]
    claims = client.get("/oauth/userinfo", headers=bearer(token)).json()
    assert claims["sub"] == str(world.owl)
    assert claims["groups"] == []
    assert not {"phone_number", "address", "nickname", "picture"} & set(claims)
    assert None not in claims.values()


def test_userinfo_refuses_as_rfc_6750_says(client: TestClient, apps: Apps, world: World) -> None:
    missing = client.get("/oauth/userinfo")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    garbage = client.post("/oauth/userinfo", headers=bearer("invalid"))
    assert garbage.status_code == 401
    assert 'error="invalid_token"' in garbage.headers["www-authenticate"]
    # A user's token without openid, and a service token: insufficient_scope, naming openid.
    signed_in(client)
    plain = exchange(client, world.app, consent(client, world.app, "profile email"))
    for token in (plain["access_token"], apps.service_token("user:read")):
        refused = client.get("/oauth/userinfo", headers=bearer(token))
        assert refused.status_code == 403
        assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
        assert 'scope="openid"' in refused.headers["www-authenticate"]


def test_a_post_may_carry_the_token_in_its_form(client: TestClient, world: World) -> None:
    """RFC 6750 2.2, as pyoidc sends it by default; one way only."""
    signed_in(client)
    token = exchange(client, world.app, consent(client, world.app, "openid email"))["access_token"]
    in_form = client.post("/oauth/userinfo", data={"access_token": token})
    assert in_form.status_code == 200
    assert in_form.json()["email"] == "fox@example.org"
    both = client.post("/oauth/userinfo", data={"access_token": token}, headers=bearer(token))
    assert both.status_code == 401
    assert client.get("/oauth/userinfo", params={"access_token": token}).status_code == 401
