"""The webhook keys (events.md, Delivery): the PEM at /api/webhooks/key, the JWKS at
/api/webhooks/keys with every key inside its overlap, and `regdesk keys rotate`."""

from __future__ import annotations

import datetime as dt
import json

import jwt
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, update
from tests.client import TestClient
from tests.conftest import Cli
from tests.web.support import make_user
from tests.webhooks.support import Receiver, endpoint

from regdesk.db import write_session
from regdesk.keys.models import SigningKey
from regdesk.outbox.service import deliver
from regdesk.webhooks.delivery import Sender

pytestmark = pytest.mark.postgres


@pytest.fixture
def client(app: FastAPI) -> TestClient:
    """The app without its lifespan: its outbox runner would race the test's `sender`."""
    return TestClient(app, base_url="https://testserver")


def jwks(client: TestClient) -> list[dict[str, str]]:
    answer = client.get("/api/webhooks/keys")
    assert answer.status_code == 200
    return list(answer.json()["keys"])


def test_the_pem_and_the_jwks_name_one_key(client: TestClient) -> None:
    pem = client.get("/api/webhooks/key")
    assert pem.status_code == 200
    assert pem.text.startswith("-----BEGIN PUBLIC KEY-----")
    [key] = jwks(client)
    assert (key["kty"], key["alg"], key["use"]) == ("RSA", "RS256", "sig")
    assert client.get("/api/webhooks/key").text == pem.text  # made once


def test_a_rotation_keeps_the_old_key_published_for_its_overlap(
    engine: Engine, client: TestClient, cli: Cli, receiver: Receiver, sender: Sender
) -> None:
    endpoint(engine, receiver.url)
    make_user(engine, "fox", password=None)
    deliver(engine, sender.channel())
    [before] = receiver.wait_for(1)
    old_kid = jwt.get_unverified_header(before.headers["authorization"][7:])["kid"]
    assert [key["kid"] for key in jwks(client)] == [old_kid]

    rotated = json.loads(cli.ok("keys", "rotate", "--json").stdout)
    assert rotated["retired"] == old_kid
    during = jwks(client)
    assert [key["kid"] for key in during] == [rotated["kid"], old_kid]
    # a signature made before the rotation still verifies against the JWKS
    old = jwt.PyJWK(during[1])
    jwt.decode(
        before.headers["authorization"][7:], old, algorithms=["RS256"], audience=receiver.url
    )
    make_user(engine, "eve", password=None)
    deliver(engine, sender.channel())
    after = receiver.wait_for(2)[1]
    assert jwt.get_unverified_header(after.headers["authorization"][7:])["kid"] == rotated["kid"]
    assert client.get("/api/webhooks/key").text != ""

    with write_session(engine) as session:  # the overlap (7 days by default) has passed
        session.execute(
            update(SigningKey)
            .where(SigningKey.kid == old_kid)
            .values(retired_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=7, seconds=1))
        )
    assert [key["kid"] for key in jwks(client)] == [rotated["kid"]]
