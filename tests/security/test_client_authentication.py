"""One way of authenticating the client per request (RFC 6749 2.3; 5.2 names "more than one
mechanism for authenticating the client" an `invalid_request`).

HTTP Basic together with a `client_secret` in the form, or with a form `client_id` naming
another client, is refused on the token, revocation and introspection endpoints, whatever the
credentials; Basic with the form's `client_id` of the same client is accepted, because common
client libraries send it.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine

from tests.client import TestClient
from tests.conftest import Apps, Registered
from tests.security.support import changed_tables, snapshot

ENDPOINTS = {
    "token": ("/api/oauth/token", {"grant_type": "client_credentials"}),
    "revocation": ("/api/oauth/revoke", {"token": "a-token-nobody-holds"}),
    "introspection": ("/api/oauth/introspect", {"token": "a-token-nobody-holds"}),
}


@pytest.fixture
def apps(engine: Engine, client: TestClient) -> Apps:
    return Apps(engine, client)


def send(client: TestClient, endpoint: str, basic: tuple[str, str], **form: str) -> httpx.Response:
    path, fields = ENDPOINTS[endpoint]
    return client.post(path, data={**fields, **form}, auth=basic)


def mixes(tool: Registered, other: Registered) -> dict[str, tuple[tuple[str, str], dict[str, str]]]:
    right = (tool.client_id, tool.client_secret)
    return {
        "Basic and the same secret in the form": (right, {"client_secret": tool.client_secret}),
        "Basic and a wrong secret in the form": (right, {"client_secret": "wrong"}),
        "Basic and the form's full credentials": (
            right,
            {"client_id": tool.client_id, "client_secret": tool.client_secret},
        ),
        "Basic and another client's full credentials in the form": (
            right,
            {"client_id": other.client_id, "client_secret": other.client_secret},
        ),
        "Basic and another client's id in the form": (right, {"client_id": other.client_id}),
        "another client's Basic and this client's id": (
            (other.client_id, other.client_secret),
            {"client_id": tool.client_id},
        ),
    }


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_two_ways_of_authenticating_in_one_request_are_refused(
    client: TestClient, apps: Apps, engine: Engine, endpoint: str
) -> None:
    tool = apps.register(service_scopes="user:read")
    other = apps.register(service_scopes="user:read")
    before = snapshot(engine)
    for name, (basic, form) in mixes(tool, other).items():
        answer = send(client, endpoint, basic, **form)
        assert answer.status_code == 400, (name, answer.text)
        assert answer.json()["error"] == "invalid_request", name
        assert "access_token" not in answer.text
        assert answer.headers["cache-control"] == "no-store"
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_basic_with_the_same_clients_id_in_the_form_is_accepted(
    client: TestClient, apps: Apps, endpoint: str
) -> None:
    tool = apps.register(service_scopes="user:read")
    basic = (tool.client_id, tool.client_secret)
    for named in (tool.client_id, f"0{tool.client_id}"):
        answer = send(client, endpoint, basic, client_id=named)
        assert answer.status_code == 200, (named, answer.text)
    if endpoint == "token":
        assert send(client, endpoint, basic).json()["token_type"] == "bearer"
