"""Every HTML page: never framed, no referrer, nothing but this origin, not cached
(decisions.md, Transport). And the pages themselves need no script and no third party."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from regdesk.web.headers import policy_with_form_target
from tests.conftest import Apps
from tests.web.support import authorize_params, log_in, make_user, register_app

Visit = Callable[[TestClient, Engine, Apps], httpx.Response]


def _signed_in(path: str, **params: str) -> Visit:
    def visit(client: TestClient, engine: Engine, apps: Apps) -> httpx.Response:
        log_in(client)
        return client.get(path, params=params)

    return visit


def _consent(sensitive: bool) -> Visit:
    def visit(client: TestClient, engine: Engine, apps: Apps) -> httpx.Response:
        log_in(client)
        scope = "pii:basic user:read" if sensitive else "pii:basic"
        return client.get("/oauth/authorize", params=authorize_params(register_app(engine), scope))

    return visit


def _lacking(client: TestClient, engine: Engine, apps: Apps) -> httpx.Response:
    log_in(client, "owl")
    params = authorize_params(register_app(engine), "user:read")
    return client.get("/oauth/authorize", params=params)


def _anonymous(path: str, method: str = "GET", **params: str) -> Visit:
    def visit(client: TestClient, engine: Engine, apps: Apps) -> httpx.Response:
        return client.request(method, path, params=params)

    return visit


def _throttled(client: TestClient, engine: Engine, apps: Apps) -> httpx.Response:
    for _ in range(6):
        response = log_in(client, "fox", "wrong")
    return response


PAGES: dict[str, tuple[Visit, int]] = {
    "login": (_anonymous("/login"), 200),
    "login-failed": (lambda c, e, a: log_in(c, "fox", "wrong"), 200),
    "login-throttled": (_throttled, 429),
    "logout-confirm": (_signed_in("/logout"), 200),
    "signed-out": (_anonymous("/logout"), 200),
    "account": (_signed_in("/account"), 200),
    "consent": (_consent(sensitive=False), 200),
    "consent-sensitive": (_consent(sensitive=True), 200),
    "invalid-request-client": (_anonymous("/oauth/authorize", client_id="404"), 400),
    "invalid-request-permission": (_lacking, 400),
    "forbidden": (_anonymous("/login", "POST"), 403),
    "oauth-logout": (_anonymous("/oauth/logout"), 200),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_carries_the_security_headers(
    client: TestClient, engine: Engine, apps: Apps, name: str
) -> None:
    make_user(engine, "fox", permissions=["user:read"])
    make_user(engine, "owl")
    visit, status = PAGES[name]
    response = visit(client, engine, apps)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-frame-options"] == "DENY"
    policy = [p.strip() for p in response.headers["content-security-policy"].split(";")]
    assert "frame-ancestors 'none'" in policy
    assert "default-src 'self'" in policy
    assert "script-src 'none'" in policy
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"

    page = response.text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<html lang="en">' in page
    assert "<script" not in page
    assert "style=" not in page
    assert "<style" not in page
    assert not re.search(r"""(?:src|href|action)=["'](?:https?:)?//""", page)  # no third party
    for field_id in re.findall(r'<input id="([^"]+)"', page):
        assert f'<label for="{field_id}">' in page


def test_the_stylesheet_is_served_from_this_site(client: TestClient) -> None:
    css = client.get("/static/regdesk.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert ":focus-visible" in css.text
    assert "@import" not in css.text
    assert "url(" not in css.text


def test_the_api_documentation_is_not_framed_either_but_keeps_its_script(
    client: TestClient,
) -> None:
    docs = client.get("/docs")
    assert docs.headers["x-frame-options"] == "DENY"
    assert docs.headers["referrer-policy"] == "no-referrer"
    policy = docs.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "default-src" not in policy  # Swagger UI starts with an inline script


def test_json_answers_are_left_alone(client: TestClient) -> None:
    response = client.get("/healthz")
    assert "content-security-policy" not in response.headers
    assert "x-frame-options" not in response.headers


def test_the_consent_form_may_lead_to_the_application_and_nowhere_else(
    client: TestClient, engine: Engine
) -> None:
    """Browsers apply `form-action` to the redirect after the consent form too."""
    make_user(engine)
    log_in(client)
    page = client.get("/oauth/authorize", params=authorize_params(register_app(engine)))
    policy = [p.strip() for p in page.headers["content-security-policy"].split(";")]
    assert "form-action 'self' https://app.example" in policy
    account = client.get("/account")
    assert "form-action 'self'" in account.headers["content-security-policy"].split("; ")


@pytest.mark.parametrize(
    ("address", "source"),
    [
        ("https://app.example/cb?x=1", "'self' https://app.example"),
        ("http://127.0.0.1:8123/back", "'self' http://127.0.0.1:8123"),
        ("com.example.app:/callback", "'self' com.example.app:"),
        ("https://app.example;script-src */cb", "'self'"),
        ("no-scheme", "'self'"),
    ],
)
def test_form_targets_in_the_policy(address: str, source: str) -> None:
    assert f"form-action {source};" in policy_with_form_target(address)
