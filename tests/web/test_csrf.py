"""Every form refuses a POST without its CSRF token, or with a wrong one: 403, nothing done."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.oauth.models import AuthorizationCode, Grant
from regdesk.web.models import WebSession
from tests.conftest import Apps
from tests.web.support import (
    PASSWORD,
    authorize_params,
    form,
    log_in,
    make_user,
    register_app,
    session_cookie,
)

FORGED = "0" * 64


def count(engine: Engine, model: type) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(model)) or 0)


@dataclass
class Case:
    """A form: how to reach it, and what would change if it were accepted."""

    action: str
    open_page: Callable[[TestClient, Engine, Apps, int], str]  # returns the page holding the form
    extra: dict[str, str]
    changes: Callable[[Engine], object]


def _login_page(client: TestClient, engine: Engine, apps: Apps, user_id: int) -> str:
    return client.get("/login").text


def _consent_page(client: TestClient, engine: Engine, apps: Apps, user_id: int) -> str:
    log_in(client)
    registered = register_app(engine)
    return client.get("/oauth/authorize", params=authorize_params(registered)).text


def _account_page(client: TestClient, engine: Engine, apps: Apps, user_id: int) -> str:
    log_in(client)
    registered = register_app(engine)
    apps.mint(registered, "pii:basic", user_id=user_id)
    return client.get("/account").text


def _logout_page(client: TestClient, engine: Engine, apps: Apps, user_id: int) -> str:
    log_in(client)
    return client.get("/logout").text


def _live_grants(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count()).select_from(Grant).where(Grant.revoked_at.is_(None))
            )
            or 0
        )


CASES = {
    "login": Case(
        "/login",
        _login_page,
        {"username": "fox", "password": PASSWORD},
        lambda engine: (count(engine, WebSession), count(engine, AuditEvent)),
    ),
    "consent": Case(
        "/oauth/authorize",
        _consent_page,
        {"decision": "authorize"},
        lambda engine: (count(engine, AuthorizationCode), count(engine, AuditEvent)),
    ),
    "revoke": Case("/account/revoke", _account_page, {}, _live_grants),
    "logout": Case("/logout", _logout_page, {}, lambda engine: count(engine, WebSession)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_form_without_its_token_is_refused_and_changes_nothing(
    client: TestClient, engine: Engine, apps: Apps, name: str
) -> None:
    case = CASES[name]
    page = case.open_page(client, engine, apps, make_user(engine))
    fields = {**form(page, case.action).fields, **case.extra}
    genuine_token = fields["csrf_token"]
    assert genuine_token
    before = case.changes(engine)
    without = {k: v for k, v in fields.items() if k != "csrf_token"}
    for sent in (without, {**without, "csrf_token": ""}, {**without, "csrf_token": FORGED}):
        response = client.post(case.action, data=sent, follow_redirects=False)
        assert response.status_code == 403
        assert "Nothing was changed" in response.text
        assert case.changes(engine) == before
    # The genuine form still works: the refusal was about the token, nothing else.
    genuine = client.post(
        case.action, data={**fields, "csrf_token": genuine_token}, follow_redirects=False
    )
    assert genuine.status_code == 303
    assert case.changes(engine) != before


@pytest.mark.parametrize("name", list(CASES))
def test_a_form_sent_from_another_site_is_refused_even_with_its_token(
    client: TestClient, engine: Engine, apps: Apps, name: str
) -> None:
    case = CASES[name]
    page = case.open_page(client, engine, apps, make_user(engine))
    fields = {**form(page, case.action).fields, **case.extra}
    before = case.changes(engine)
    for site in ("cross-site", "same-site"):
        response = client.post(
            case.action, data=fields, headers={"Sec-Fetch-Site": site}, follow_redirects=False
        )
        assert response.status_code == 403
    assert case.changes(engine) == before


def test_another_sessions_token_is_worthless(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    make_user(engine)
    make_user(engine, "owl")
    log_in(client)
    other = TestClient(app, base_url="https://testserver")
    log_in(other, "owl")
    theirs = form(other.get("/logout").text, "/logout").fields["csrf_token"]
    response = client.post("/logout", data={"csrf_token": theirs}, follow_redirects=False)
    assert response.status_code == 403
    assert client.get("/account", follow_redirects=False).status_code == 200


def test_the_login_token_needs_its_cookie(client: TestClient, app: FastAPI, engine: Engine) -> None:
    """A token copied from one browser's login form is useless in another (double submit)."""
    make_user(engine)
    token = form(client.get("/login").text, "/login").fields["csrf_token"]
    victim = TestClient(app, base_url="https://testserver")
    response = victim.post(
        "/login", data={"csrf_token": token, "username": "fox", "password": PASSWORD}
    )
    assert response.status_code == 403  # no cookie at all
    victim.get("/login")  # a cookie of its own, which the copied token does not match
    response = victim.post(
        "/login",
        data={"csrf_token": token, "username": "fox", "password": PASSWORD},
        follow_redirects=False,
    )
    assert response.status_code == 403
    assert session_cookie(victim) is None
