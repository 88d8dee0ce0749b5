"""`regdesk tokens purge`: what can never be used again goes; what can, stays."""

from __future__ import annotations

import json

from sqlalchemy import Engine, func, select

from regdesk.db import read_session
from regdesk.oauth.models import AccessToken, AuthorizationCode, Grant, RefreshToken
from tests.client import TestClient
from tests.conftest import Apps, Cli, bearer
from tests.oauth.test_user_grants import age, me
from tests.oauth.user_flow import make_flow


def counts(engine: Engine) -> dict[str, int]:
    with read_session(engine) as session:
        return {
            model.__name__: session.scalar(select(func.count()).select_from(model)) or 0
            for model in (AuthorizationCode, AccessToken, RefreshToken, Grant)
        }


def test_purge_removes_the_dead_and_keeps_the_living(
    client: TestClient, apps: Apps, engine: Engine, cli: Cli
) -> None:
    flow = make_flow(client, apps, engine)
    dead = flow.tokens()  # its grant will be revoked
    flow.refresh(dead["refresh_token"])
    flow.refresh(dead["refresh_token"])  # reuse: the whole grant dies
    living = flow.tokens()
    flow.code()  # a code never redeemed
    age(engine, AuthorizationCode, "expires_at", 1)  # every code is now past its time
    before = counts(engine)

    purged = json.loads(cli.ok("tokens", "purge", "--json", "--batch-size", "1").stdout)

    after = counts(engine)
    assert purged["authorizationCodes"] == before["AuthorizationCode"] == 3
    assert purged["grants"] == 1
    assert purged["webSessions"] == 0  # nobody signed in; tests/web checks their expiry
    assert after == {"AuthorizationCode": 0, "AccessToken": 1, "RefreshToken": 1, "Grant": 1}
    assert me(flow, living["access_token"]) == 200
    assert flow.refresh(living["refresh_token"]).status_code == 200
    # A purged token reads as unknown: still refused.
    assert client.get("/api/users/current", headers=bearer(dead["access_token"])).status_code == 401
