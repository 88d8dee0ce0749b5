"""A user's grant end to end with an independent client library (Authlib's OAuth2Session)
against a live `regdesk serve`: authorization code with PKCE, refresh, revocation.

The library plays the tool; a cookie-keeping HTTP client plays the user's browser, signing
in and pressing Authorize on the real pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.oauth.applications import create_application
from tests import http_calls
from tests.conftest import BACKENDS, scratch_database_url
from tests.helpers import live_server
from tests.transfer.support import import_

CALLBACK = "http://127.0.0.1:9/callback"  # never contacted: the user agent stops at it
PASSWORD = "a long and memorable passphrase"


class Forms(HTMLParser):
    """The fields of each form on a page: {name: value} of its inputs, and its action."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        fields = dict(attrs)
        if tag == "form":
            self.forms.append({"__action__": fields.get("action") or ""})
        elif (
            tag == "input" and self.forms and fields.get("name") and fields.get("type") != "submit"
        ):
            self.forms[-1][str(fields["name"])] = fields.get("value") or ""


def page_forms(html: str) -> list[dict[str, str]]:
    parser = Forms()
    parser.feed(html)
    return parser.forms


def form_with(forms: list[dict[str, str]], field: str) -> dict[str, str]:
    return next(f for f in forms if field in f)


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A live server with one user and one application: (base, client_id, client_secret)."""
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        client_id, secret = seed_fox_and_app(engine)
        engine.dispose()
        with live_server(url) as base:
            yield base, client_id, secret


def seed_fox_and_app(engine: Engine, obo_scopes: str = "pii:basic pii:email") -> tuple[str, str]:
    """The user fox (with PASSWORD) and the Schedule App: its client id and secret."""
    import_(
        engine,
        {
            "users": [
                {
                    "username": "fox",
                    "email": "fox@example.org",
                    "firstName": "Fae",
                    "lastName": "Fox",
                    "password": PASSWORD,
                },
            ]
        },
    )
    with write_session(engine) as session:
        application, secret = create_application(
            session,
            Actor("test"),
            name="Schedule App",
            obo_scopes=obo_scopes,
            redirect_uris=[CALLBACK],
        )
    return str(application.id), secret


def authorize_as_user(base: str, authorization_url: str) -> str:
    """Sign in and press Authorize; the redirect the tool receives."""
    with http_calls.client(base_url=base) as browser:
        login = browser.get(authorization_url, follow_redirects=True)
        assert urlsplit(str(login.url)).path == "/login"
        fields = form_with(page_forms(login.text), "password")
        fields.update(username="fox", password=PASSWORD)
        action = urljoin(str(login.url), fields.pop("__action__"))
        consent = browser.post(action, data=fields, follow_redirects=True)
        assert "Schedule App" in consent.text
        fields = form_with(page_forms(consent.text), "authorization_request")
        action = urljoin(str(consent.url), fields.pop("__action__"))
        decided = browser.post(action, data={**fields, "decision": "authorize"})
        assert decided.status_code in (302, 303)
        return decided.headers["location"]


def test_code_with_pkce_then_refresh_then_revoke(server: tuple[str, str, str]) -> None:
    base, client_id, client_secret = server
    tool = OAuth2Session(
        client_id,
        client_secret,
        scope="pii:basic pii:email",
        redirect_uri=CALLBACK,
        code_challenge_method="S256",
    )
    verifier = generate_token(48)
    url, state = tool.create_authorization_url(f"{base}/oauth/authorize", code_verifier=verifier)

    back = authorize_as_user(base, url)
    query = parse_qs(urlsplit(back).query)
    assert back.startswith(CALLBACK)
    assert query["state"] == [state]
    assert query["iss"] == [base]

    token = tool.fetch_token(
        f"{base}/api/oauth/token", authorization_response=back, code_verifier=verifier
    )
    assert token["token_type"] == "bearer"
    assert token["scope"] == "pii:basic pii:email"
    me = tool.get(f"{base}/api/users/current")
    assert me.status_code == 200
    assert me.json()["email"] == "fox@example.org"

    first_refresh = token["refresh_token"]
    renewed = tool.refresh_token(f"{base}/api/oauth/token", refresh_token=first_refresh)
    assert renewed["refresh_token"] != first_refresh
    assert tool.get(f"{base}/api/users/current").status_code == 200

    revoked = tool.revoke_token(
        f"{base}/api/oauth/revoke",
        token=renewed["refresh_token"],
        token_type_hint="refresh_token",
    )
    assert revoked.status_code == 200
    assert tool.get(f"{base}/api/users/current").status_code == 401
    with pytest.raises(OAuthError, match="invalid_grant"):
        tool.refresh_token(f"{base}/api/oauth/token", refresh_token=renewed["refresh_token"])
