"""What the token-endpoint, guard and client-library tests share: registering applications with
chosen credentials, HTTP Basic as different clients write it, the shapes of the two kinds of
error, and a live `regdesk serve` process."""

from __future__ import annotations

import base64

import httpx
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.applications import create_application
from tests.conftest import Registered

TOKEN_URL = "/api/oauth/token"
USER_ROUTE = "/api/v0/users/1"  # any user:read route; the guard runs before the lookup
# An imported secret (operator.md) with what RFC 6749 2.3.1 says must be URL-encoded in Basic.
AWKWARD_SECRET = "imported:secret 100%41+%2B/&=plus"


def register(
    engine: Engine,
    *,
    service_scopes: str = "",
    obo_scopes: str = "",
    client_id: int | None = None,
    client_secret: str | None = None,
) -> Registered:
    with write_session(engine) as session:
        application, secret = create_application(
            session,
            Actor("test"),
            name="Tool",
            service_scopes=service_scopes,
            obo_scopes=obo_scopes,
            client_id=client_id,
            client_secret=client_secret,
        )
    return Registered(str(application.id), secret)


def basic(client_id: str, client_secret: str) -> dict[str, str]:
    """`Authorization: Basic` with the credentials as given (encode them first if wanted)."""
    pair = f"{client_id}:{client_secret}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def assert_oauth_error(response: httpx.Response, status: int, error: str) -> None:
    """RFC 6749 5.2, exactly: two members, JSON, never cached (decisions.md, Errors and Tokens)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "error_description"}, body
    assert body["error"] == error, body
    assert isinstance(body["error_description"], str)
    assert body["error_description"]
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"


def assert_invalid_token(response: httpx.Response, message: str = "Invalid token.") -> None:
    assert response.status_code == 401, response.text
    assert response.json() == {"errors": {"authentication": {"message": message}}}
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer "), challenge
    assert 'error="invalid_token"' in challenge


def assert_insufficient_scope(response: httpx.Response, scope: str) -> None:
    assert response.status_code == 403, response.text
    access = response.json()["errors"]["access"]
    assert set(access) == {"message", "permissions"}, access
    assert access["permissions"] == [scope]
    assert isinstance(access["message"], str)
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="{scope}"'
    )
