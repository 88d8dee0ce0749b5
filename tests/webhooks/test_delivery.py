"""Delivery (events.md, Delivery): the exact body and headers, a JWT a receiver written for the
hosted service verifies with PyJWT against the PEM of /api/webhooks/key, and the delivery log.
"""

from __future__ import annotations

import json

import jwt
import pytest
from sqlalchemy import Engine
from tests.client import TestClient
from tests.web.support import make_user
from tests.webhooks.support import ISSUER, Receiver, deliveries, endpoint, verify

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.outbox.service import deliver
from regdesk.webhooks.delivery import Sender
from regdesk.webhooks.signing import LIFETIME

pytestmark = pytest.mark.postgres


def a_user(engine: Engine, username: str = "fox") -> int:
    return make_user(engine, username, password=None)


def public_pem(database_url: str) -> str:
    app = create_app(load_settings(database_url=database_url, public_url=ISSUER))
    answer = TestClient(app, base_url=ISSUER).get("/api/webhooks/key")
    assert answer.status_code == 200
    assert answer.text.startswith("-----BEGIN PUBLIC KEY-----")
    return answer.text


def test_a_delivery_verifies_as_the_hosted_services_receivers_check_it(
    engine: Engine, database_url: str, receiver: Receiver, sender: Sender
) -> None:
    endpoint(engine, receiver.url, "user-updated")
    user_id = a_user(engine)
    assert deliver(engine, sender.channel()).sent == 1
    [got] = receiver.wait_for(1)

    claims = verify(got, public_pem(database_url), receiver.url)
    assert claims["iss"] == ISSUER
    assert claims["sub"] == "webhook"
    assert claims["exp"] - claims["iat"] == LIFETIME
    assert got.headers["content-type"] == "application/json"
    assert got.headers["user-agent"].startswith("regdesk/")
    assert got.headers["webhook-id"].startswith("msg_")
    assert abs(int(got.headers["webhook-timestamp"]) - claims["iat"]) <= 1
    body = json.loads(got.body)
    assert list(body) == ["event", "data"]
    assert body["event"] == "user-updated"
    assert body["data"]["user"]["id"] == str(user_id)
    assert body["data"]["user"]["username"] == "fox"
    [logged] = deliveries(engine)
    assert (logged.event, logged.attempt, logged.status_code, logged.error) == (
        "user-updated",
        1,
        200,
        None,
    )
    assert logged.jti == claims["jti"]
    assert logged.answer == "answer 200"


def test_a_body_changed_on_the_way_fails_the_integrity_check(
    engine: Engine, database_url: str, receiver: Receiver, sender: Sender
) -> None:
    endpoint(engine, receiver.url)
    a_user(engine)
    deliver(engine, sender.channel())
    [got] = receiver.wait_for(1)
    got.body = got.body.replace(b'"fox"', b'"eve"')
    with pytest.raises(AssertionError, match="not the one signed"):
        verify(got, public_pem(database_url), receiver.url)


def test_the_jwt_is_for_one_endpoint_only(
    engine: Engine, database_url: str, receiver: Receiver, sender: Sender
) -> None:
    endpoint(engine, receiver.url)
    a_user(engine)
    deliver(engine, sender.channel())
    [got] = receiver.wait_for(1)
    with pytest.raises(jwt.InvalidAudienceError):
        verify(got, public_pem(database_url), "https://another.example.org/hooks")


def test_the_server_process_delivers_after_commit(
    engine: Engine, database_url: str, receiver: Receiver
) -> None:
    """The app's own outbox runner, woken by the commit: no explicit delivery."""
    endpoint(engine, receiver.url)
    settings = load_settings(
        database_url=database_url, public_url=ISSUER, webhooks_allow_private="on"
    )
    with TestClient(create_app(settings), base_url=ISSUER):
        a_user(engine)
        [got] = receiver.wait_for(1)
    assert got.event == "user-updated"


def test_a_redirect_is_not_followed_and_counts_as_a_failure(
    engine: Engine, receiver: Receiver, sender: Sender
) -> None:
    receiver.answers = [302]
    endpoint(engine, receiver.url)
    a_user(engine)
    done = deliver(engine, sender.channel())
    assert (done.sent, done.retrying) == (0, 1)
    assert len(receiver.received) == 1
    assert deliveries(engine)[0].status_code == 302
