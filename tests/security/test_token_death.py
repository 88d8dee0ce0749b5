"""What a suspension or a scope's removal ends stays ended (decisions.md, Scopes; RFC 9700 2.3,
the least privilege a token keeps).

Reinstating an application, or giving it a removed scope back, brings back nothing that was
issued before: not its service tokens, its users' access and refresh tokens, nor its codes not
yet redeemed; the bearer guard, introspection and the token endpoint all agree.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.applications import set_suspended, update_application
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.oauth.user_flow import REDIRECT, Flow
from tests.security.support import new_user

USERS = "/api/v0/users/search"
VOLUNTEERS = "/api/v0/volunteers/search"


@pytest.fixture
def apps(engine: Engine, client: TestClient) -> Apps:
    return Apps(engine, client)


def introspected(flow: Flow, token: str) -> dict[str, object]:
    answer = flow.client.post(
        "/api/oauth/introspect",
        data={"token": token},
        auth=(flow.app.client_id, flow.app.client_secret),
    )
    assert answer.status_code == 200, answer.text
    document: dict[str, object] = answer.json()
    return document


def test_reinstating_a_suspended_application_brings_nothing_back(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    _, user_id = new_user(engine, permissions=["admin"])
    tool = apps.register(
        obo_scopes="pii:basic user:read", service_scopes="user:read", redirect_uris=[REDIRECT]
    )
    flow = Flow(client, engine, tool, user_id)
    service = flow.token(grant_type="client_credentials").json()["access_token"]
    obo = flow.tokens("pii:basic user:read")
    unredeemed = flow.code("pii:basic")
    assert client.post(USERS, json={}, headers=bearer(service)).status_code == 200

    for suspended in (True, False):
        with write_session(engine) as session:
            set_suspended(session, Actor("test"), tool.id, suspended)

    for token in (service, obo["access_token"]):
        answer = client.post(USERS, json={}, headers=bearer(token))
        assert answer.status_code == 401, answer.text
        assert answer.json() == {"errors": {"authentication": {"message": "Invalid token."}}}
        assert introspected(flow, token) == {"active": False}
    assert introspected(flow, obo["refresh_token"]) == {"active": False}
    assert flow.refresh(obo["refresh_token"]).json()["error"] == "invalid_grant"
    assert flow.exchange(unredeemed).json()["error"] == "invalid_grant"

    # Reinstated, it starts anew: a token issued now works.
    fresh = flow.token(grant_type="client_credentials").json()["access_token"]
    assert client.post(USERS, json={}, headers=bearer(fresh)).status_code == 200


def test_a_scope_given_back_does_not_come_back_to_tokens_issued_before(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    _, user_id = new_user(engine, permissions=["admin"])
    both = "user:read volunteer:read"
    tool = apps.register(
        obo_scopes=f"pii:basic {both}", service_scopes=both, redirect_uris=[REDIRECT]
    )
    flow = Flow(client, engine, tool, user_id)
    service = flow.token(grant_type="client_credentials").json()["access_token"]
    obo = flow.tokens(f"pii:basic {both}")["access_token"]
    for token in (service, obo):
        assert client.post(VOLUNTEERS, json={}, headers=bearer(token)).status_code == 200

    for service_scopes, obo_scopes in (
        ("user:read", "pii:basic user:read"),
        (both, f"pii:basic {both}"),
    ):
        with write_session(engine) as session:
            update_application(
                session,
                Actor("test"),
                tool.id,
                service_scopes=service_scopes,
                obo_scopes=obo_scopes,
            )

    for token, kept in ((service, "user:read"), (obo, "pii:basic user:read")):
        refused = client.post(VOLUNTEERS, json={}, headers=bearer(token))
        assert refused.status_code == 403, refused.text
        assert client.post(USERS, json={}, headers=bearer(token)).status_code == 200
        assert introspected(flow, token)["scope"] == kept
    fresh = flow.token(grant_type="client_credentials").json()
    assert fresh["scope"] == both
    assert (
        client.post(VOLUNTEERS, json={}, headers=bearer(fresh["access_token"])).status_code == 200
    )
