"""Independent OAuth 2.0 client libraries against a live `regdesk serve`: client_credentials with
requests-oauthlib and with Authlib's requests and httpx clients, each by HTTP Basic and by form
fields, then an API call with the token they got (api.md 4.2, 4.3, 5.2)."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session as AuthlibSession
from oauthlib.oauth2 import BackendApplicationClient
from requests_oauthlib import OAuth2Session
from sqlalchemy import Engine

from regdesk.db import make_engine
from tests.conftest import BACKENDS, Registered, scratch_database_url
from tests.helpers import live_server
from tests.oauth.support import AWKWARD_SECRET, TOKEN_URL, register

with warnings.catch_warnings():
    # Authlib asks for the httpx2 fork and warns on import when it drives httpx itself.
    warnings.filterwarnings("ignore", "The httpx module is deprecated")
    from authlib.integrations.httpx_client import OAuth2Client

SCOPES = "user:read volunteer:read"


class Live:
    def __init__(self, base: str, engine: Engine) -> None:
        self.base = base
        self.engine = engine

    @property
    def token_url(self) -> str:
        return self.base + TOKEN_URL

    @property
    def search_url(self) -> str:
        return self.base + "/api/v0/volunteers/search"


@pytest.fixture(scope="module", params=BACKENDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """One server per database for the whole module: starting one takes about a second."""
    directory: Path = tmp_path_factory.mktemp("live")
    with scratch_database_url(request.param, directory) as url, live_server(url) as base:
        engine = make_engine(url)  # the server has migrated it before answering /healthz
        try:
            yield Live(base, engine)
        finally:
            engine.dispose()


@pytest.fixture(autouse=True)
def loopback_http(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both libraries refuse plain http unless told; the server answers on loopback only.
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")


@pytest.fixture
def app(live: Live) -> Registered:
    """An application whose (imported) secret holds ':', '%', '+' and a space."""
    return register(live.engine, service_scopes=SCOPES, client_secret=AWKWARD_SECRET)


def recorded(session: requests.Session) -> list[requests.PreparedRequest]:
    """The requests a session sends from now on."""
    sent: list[requests.PreparedRequest] = []
    session.hooks["response"].append(lambda response, *_, **__: sent.append(response.request))
    return sent


def credentials_sent(headers: Mapping[str, str], body: str | bytes | None, app: Registered) -> str:
    """How a token request authenticated the client: "basic" or "post" (never both)."""
    text = body.decode() if isinstance(body, bytes) else body or ""
    in_body = "client_secret=" in text
    authorization = headers.get("Authorization", "")
    if authorization.startswith("Basic "):
        assert not in_body, text
        assert base64.b64decode(authorization[6:]).decode().startswith(f"{app.client_id}:")
        return "basic"
    assert in_body, text
    assert f"client_id={app.client_id}" in text
    return "post"


def assert_service_token(token: Mapping[str, Any], scope: str) -> None:
    assert token["token_type"].lower() == "bearer"
    assert token["expires_in"] == 3600
    granted = token["scope"]  # oauthlib hands it over as a list, Authlib as the string
    assert set(granted.split(" ") if isinstance(granted, str) else granted) == set(scope.split())
    assert "refresh_token" not in token


@pytest.mark.parametrize(
    ("include_client_id", "method"), [(None, "basic"), (False, "basic"), (True, "post")]
)
def test_requests_oauthlib_backend_application_client(
    live: Live, app: Registered, include_client_id: bool | None, method: str
) -> None:
    session = OAuth2Session(client=BackendApplicationClient(client_id=app.client_id))
    sent = recorded(session)
    token = session.fetch_token(
        token_url=live.token_url,
        client_id=app.client_id,
        client_secret=app.client_secret,
        include_client_id=include_client_id,
    )
    assert credentials_sent(sent[0].headers, sent[0].body, app) == method
    assert_service_token(token, SCOPES)  # no scope asked: every approved scope
    response = session.post(live.search_url, json={})
    assert response.status_code == 200, response.text
    assert response.json()["data"] == []
    assert response.request.headers["Authorization"] == f"Bearer {token['access_token']}"

    narrower = OAuth2Session(
        client=BackendApplicationClient(client_id=app.client_id, scope=["user:read"])
    )
    token = narrower.fetch_token(
        token_url=live.token_url,
        client_id=app.client_id,
        client_secret=app.client_secret,
        include_client_id=include_client_id,
    )
    assert_service_token(token, "user:read")
    refused = narrower.post(live.search_url, json={})
    assert refused.status_code == 403
    assert refused.json()["errors"]["access"]["permissions"] == ["volunteer:read"]


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_authlib_requests_client(live: Live, app: Registered, method: str) -> None:
    session = AuthlibSession(
        client_id=app.client_id,
        client_secret=app.client_secret,
        token_endpoint_auth_method=method,
        scope=SCOPES,
    )
    sent = recorded(session)
    token = session.fetch_token(live.token_url, grant_type="client_credentials")
    assert credentials_sent(sent[0].headers, sent[0].body, app) == method.removeprefix(
        "client_secret_"
    )
    assert_service_token(token, SCOPES)
    response = session.post(live.search_url, json={})
    assert response.status_code == 200, response.text
    assert response.json()["hasMore"] is False


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_authlib_httpx_client(live: Live, app: Registered, method: str) -> None:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> None:
        sent.append(request)

    with OAuth2Client(
        client_id=app.client_id,
        client_secret=app.client_secret,
        token_endpoint_auth_method=method,
        scope="volunteer:read",
        event_hooks={"request": [record]},
    ) as client:
        token = client.fetch_token(live.token_url, grant_type="client_credentials")
        request = sent[0]
        assert credentials_sent(request.headers, request.read(), app) == method.removeprefix(
            "client_secret_"
        )
        assert_service_token(token, "volunteer:read")
        response = client.post(live.search_url, json={})
        assert response.status_code == 200, response.text
        wrong = client.get(live.base + "/api/v0/users/1")
        assert wrong.status_code == 403, wrong.text
