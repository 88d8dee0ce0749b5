"""The security headers' own rules (web/headers.py): which answers they leave alone, where a
form may lead (`form-action`: this site, and on the consent screen the application), and the
stylesheet the pages load from this site. That every page carries them, and needs no script
and no third party: tests/security/test_headers.py."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from regdesk.web.headers import policy_with_form_target
from tests.client import TestClient
from tests.web.support import authorize_params, log_in, make_user, register_app


def test_the_stylesheet_is_served_from_this_site(client: TestClient) -> None:
    css = client.get("/static/regdesk.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert ":focus-visible" in css.text
    assert "@import" not in css.text
    assert "url(" not in css.text


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
