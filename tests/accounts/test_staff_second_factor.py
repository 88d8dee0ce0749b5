"""REGDESK_STAFF_2FA=required (accounts.md, Second factor): staff without a second factor are
sent to add one before the admin area or a consent to a sensitive scope works for them; the
API is not affected; everyone else, and everyone while it is optional, is let through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.config import load_settings
from tests.accounts.factor_support import add_app, code, second_step
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, Apps, bearer
from tests.web.support import authorize_params, log_in, make_user, register_app, signed_in

pytestmark = pytest.mark.postgres
SET_UP = "/account?factor=required#factors-heading"


@pytest.fixture
def required(engine: Engine, database_url: str) -> Iterator[TestClient]:
    app = create_app(
        load_settings(database_url=database_url, public_url=PUBLIC_URL, staff_2fa="required")
    )
    with TestClient(app, base_url=PUBLIC_URL) as client:
        yield client


def test_an_admin_without_a_factor_is_sent_to_add_one_then_let_in(
    required: TestClient, engine: Engine
) -> None:
    make_user(engine, "boss", permissions=["admin"])
    signed_in(required, "boss")
    sent = required.get("/admin", follow_redirects=False)
    assert (sent.status_code, sent.headers["location"]) == (303, SET_UP)
    page = required.get(SET_UP).text
    assert "The organizers require a second factor" in page

    secret, _ = add_app(required)
    assert required.get("/admin", follow_redirects=False).status_code == 200
    later = TestClient(required.app, base_url=PUBLIC_URL)
    log_in(later, "boss")
    assert second_step(later, code(secret, 1)).status_code == 303
    assert later.get("/admin", follow_redirects=False).status_code == 200


def test_a_sensitive_permission_needs_a_factor_for_a_sensitive_consent(
    required: TestClient, engine: Engine
) -> None:
    make_user(engine, "reader", permissions=["user:read"])
    application = register_app(engine)
    signed_in(required, "reader")
    asked = required.get(
        "/oauth/authorize",
        params=authorize_params(application, "user:read"),
        follow_redirects=False,
    )
    assert (asked.status_code, asked.headers["location"]) == (303, SET_UP)
    plain = required.get("/oauth/authorize", params=authorize_params(application, "pii:basic"))
    assert plain.status_code == 200  # a scope that is not sensitive: no factor needed


def test_an_attendee_and_the_api_are_not_affected(
    required: TestClient, engine: Engine, apps: Apps
) -> None:
    make_user(engine, "fox")
    boss = make_user(engine, "boss", permissions=["admin"])
    signed_in(required, "fox")
    assert required.get("/account").status_code == 200
    token = apps.mint(register_app(engine), "pii:basic", user_id=boss)
    assert required.get("/api/users/current", headers=bearer(token)).status_code == 200


def test_while_optional_an_admin_needs_no_factor(client: TestClient, engine: Engine) -> None:
    make_user(engine, "boss", permissions=["admin"])
    signed_in(client, "boss")
    assert client.get("/admin", follow_redirects=False).status_code == 200
