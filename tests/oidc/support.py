"""What the OpenID Connect tests share: a user with every claim to give, an OpenID application,
and the code flow driven through the real pages (the login form, the consent screen)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import Engine

from regdesk.oauth.applications import DEFAULT_ID_TOKEN_ALG
from tests.client import TestClient
from tests.conftest import Registered, register_application
from tests.transfer.support import import_
from tests.web.support import PASSWORD as WEB_PASSWORD
from tests.web.support import form, query

PASSWORD = WEB_PASSWORD  # what tests.web.support signs in with
CALLBACK = "https://rp.example/callback"
LOGGED_OUT = "https://rp.example/logged-out"
ISSUER = "https://testserver"
SCOPES = "openid profile email phone address groups pii:basic pii:email"

DOCUMENT: dict[str, Any] = {
    "roles": [{"name": "Staff", "staff": True}, {"name": "Dealer"}],
    "users": [
        {
            "username": "fox",
            "email": "fox@example.org",
            "firstName": "Fae",
            "lastName": "Fox",
            "preferredName": "Foxy",
            "phone": "(775) 555-0123",
            "verified": True,
            "password": PASSWORD,
            "profilePictureUrl": "https://example.org/fox.png",
            "address": {
                "addressLine1": "1 Main St",
                "addressLine2": None,
                "addressCity": "Reno",
                "addressState": "NV",
                "addressZipcode": "89501",
                "addressCountry": "us",
            },
            "roles": ["Staff", "Dealer"],
        },
        {
            "username": "owl",
            "email": "owl@example.org",
            "firstName": "Olive",
            "lastName": "Owl",
            "password": PASSWORD,
        },
    ],
}


@dataclass(frozen=True)
class World:
    fox: int
    owl: int
    app: Registered


def seed(engine: Engine, **application: Any) -> World:
    """fox (every claim), owl (hardly any) and an OpenID application (`application`: more of
    `create_application`'s arguments)."""
    ids = import_(engine, DOCUMENT).as_json()["users"]
    return World(int(ids["fox"]), int(ids["owl"]), register(engine, **application))


def register(
    engine: Engine,
    *,
    obo_scopes: str = SCOPES,
    redirect_uris: Sequence[str] = (CALLBACK,),
    post_logout_redirect_uris: Sequence[str] = (LOGGED_OUT,),
    id_token_alg: str = DEFAULT_ID_TOKEN_ALG,
    name: str = "Wiki",
) -> Registered:
    return register_application(
        engine,
        name=name,
        redirect_uris=redirect_uris,
        obo_scopes=obo_scopes,
        post_logout_redirect_uris=post_logout_redirect_uris,
        id_token_alg=id_token_alg,
    )


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize_params(app: Registered, scope: str = SCOPES, **extra: str) -> dict[str, str]:
    return {
        "client_id": app.client_id,
        "response_type": "code",
        "redirect_uri": CALLBACK,
        "scope": scope,
        "state": "st",
        **extra,
    }


def consent(client: TestClient, app: Registered, scope: str = SCOPES, **extra: str) -> str:
    """As a signed-in visitor: the authorization request, Authorize pressed; the code."""
    page = client.get("/oauth/authorize", params=authorize_params(app, scope, **extra))
    assert page.status_code == 200, page.text
    fields = form(page.text, "/oauth/authorize").fields
    answer = client.post(
        "/oauth/authorize", data={**fields, "decision": "authorize"}, follow_redirects=False
    )
    assert answer.status_code == 303, answer.text
    return query(answer.headers["location"])["code"][0]


def exchange(client: TestClient, app: Registered, code: str, **extra: str) -> dict[str, Any]:
    response = client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, **extra},
        auth=(app.client_id, app.client_secret),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def refresh(client: TestClient, app: Registered, refresh_token: str) -> dict[str, Any]:
    response = client.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token},
        auth=(app.client_id, app.client_secret),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def verified_claims(client: TestClient, id_token: str) -> dict[str, Any]:
    """The ID token's claims, its signature checked against the server's JWKS."""
    keys = KeySet.import_key_set(client.get("/oauth/jwks").json())
    claims: dict[str, Any] = jwt.decode(id_token, keys, algorithms=["RS256", "ES256"]).claims
    return claims


def header(id_token: str) -> dict[str, Any]:
    """The ID token's JOSE header, unverified."""
    segment = id_token.split(".")[0]
    decoded: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    )
    return decoded
