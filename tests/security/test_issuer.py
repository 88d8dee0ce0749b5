"""Where the service says it is: a stable issuer and one transport rule (RFC 8414 3.3, RFC 9207;
decisions.md, Transport).

The issuer comes from REGDESK_PUBLIC_URL, never from a request's `Host` header, and once that
is set a request naming another host is refused; `regdesk serve` will not listen beyond
loopback without it. A request the transport rules let through gets the same answer on every
path of the token endpoint (no HTTPS check of Authlib's own turning it into a 500).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.cli import main
from regdesk.config import DEFAULT_PUBLIC_URL
from tests import forkserver
from tests.client import TestClient
from tests.conftest import Apps
from tests.helpers import free_port
from tests.oauth.user_flow import REDIRECT, Flow
from tests.security.conftest import generous_settings
from tests.security.support import new_user
from tests.web.support import PASSWORD, form, log_in, query

PUBLIC = "https://reg.example.org"
METADATA = "/.well-known/oauth-authorization-server"


def served(engine: Engine, database_url: str, **settings: str) -> FastAPI:
    return create_app(generous_settings(database_url, **settings))


@pytest.fixture
def public_app(engine: Engine, database_url: str) -> FastAPI:
    return served(engine, database_url, public_url=PUBLIC)


@pytest.fixture
def public(public_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(public_app, base_url=PUBLIC, raise_server_exceptions=False) as client:
        yield client


def naming(client: TestClient, host: str) -> TestClient:
    """The same running app (same event loop), reached by a request naming `host`."""
    other = TestClient(client.app, base_url=f"https://{host}", raise_server_exceptions=False)
    other.portal = client.portal
    return other


# --- the issuer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["evil.example", "reg.example.org.evil.example", "reg.example.org:8443", "127.0.0.1"]
)
def test_a_request_naming_another_host_is_refused(public: TestClient, host: str) -> None:
    elsewhere = naming(public, host)
    for method, path in [
        ("GET", METADATA),
        ("GET", "/oauth/authorize?client_id=1&response_type=code"),
        ("GET", "/login"),
        ("POST", "/api/oauth/token"),
        ("GET", "/api/users/current"),
    ]:
        answer = elsewhere.request(method, path)
        assert answer.status_code == 400, (host, path)
        assert "does not answer for the host" in answer.json()["errors"]["transport"]["message"]
        assert "evil" not in answer.text
    assert elsewhere.get("/healthz").status_code == 200  # probes name an address, not the host


@pytest.mark.parametrize("host", ["reg.example.org", "REG.example.org", "reg.example.org:443"])
def test_the_public_host_is_answered_and_is_the_issuer(public: TestClient, host: str) -> None:
    document = naming(public, host).get(METADATA).json()
    assert document["issuer"] == PUBLIC
    assert document["token_endpoint"] == f"{PUBLIC}/api/oauth/token"


def test_without_a_public_url_the_issuer_does_not_follow_the_host_header(
    engine: Engine, database_url: str
) -> None:
    app = served(engine, database_url)
    with TestClient(app, base_url="https://evil.example") as client:
        assert client.get(METADATA).json()["issuer"] == DEFAULT_PUBLIC_URL


def test_the_authorization_response_names_the_configured_issuer(
    public: TestClient, apps: Apps, engine: Engine
) -> None:
    username, _ = new_user(engine)
    tool = apps.register(obo_scopes="pii:basic", redirect_uris=[REDIRECT])
    assert log_in(public, username, PASSWORD).status_code == 303
    consent = public.get(
        "/oauth/authorize",
        params={
            "client_id": tool.client_id,
            "response_type": "code",
            "redirect_uri": REDIRECT,
            "scope": "pii:basic",
        },
    )
    assert consent.status_code == 200
    answer = {**form(consent.text, "/oauth/authorize").fields, "decision": "authorize"}
    reply = public.post("/oauth/authorize", data=answer, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    assert query(reply.headers["location"])["iss"] == [PUBLIC]


@pytest.fixture
def apps(engine: Engine, public: TestClient) -> Apps:
    return Apps(engine, public)


# --- serve -----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])  # noqa: S104 (the point)
def test_serve_beyond_loopback_needs_a_public_url(database_url: str, host: str) -> None:
    # A real process: were the rule missing, it would start serving (and be stopped here).
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env["REGDESK_DATABASE_URL"] = database_url
    regdesk = Path(sys.executable).with_name("regdesk")
    process = forkserver.popen(
        [str(regdesk), "serve", "--host", host, "--port", str(free_port())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, stderr = process.communicate(timeout=30)
    assert process.returncode != 0
    assert "REGDESK_PUBLIC_URL" in stderr.decode()


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("http://reg.example.org", "must use https"),
        ("reg.example.org", "absolute address"),
        ("https://reg.example.org/regdesk", "origin only"),
        ("https://user@reg.example.org", "origin only"),
        ("https://reg.example.org:port", "not a URL"),
    ],
)
def test_a_public_url_must_be_an_https_origin(database_url: str, value: str, why: str) -> None:
    result = CliRunner().invoke(
        main,
        ["--public-url", value, "serve"],
        env={"REGDESK_DATABASE_URL": database_url},
    )
    assert result.exit_code != 0
    assert why in result.output + result.stderr


# --- one transport rule for every path ------------------------------------------------------


@pytest.fixture
def behind_local_proxy(public_app: FastAPI) -> Iterator[TestClient]:
    """The README's proxy set-up before REGDESK_TRUSTED_PROXIES is set: plain HTTP from a proxy
    on loopback, naming the public host."""
    with TestClient(
        public_app,
        base_url="http://reg.example.org",
        client=("127.0.0.1", 50000),
        raise_server_exceptions=False,
    ) as client:
        yield client


def test_a_request_the_transport_rules_let_through_gets_one_answer_on_every_path(
    behind_local_proxy: TestClient, engine: Engine
) -> None:
    apps = Apps(engine, behind_local_proxy)
    _, user_id = new_user(engine)
    tool = apps.register(
        obo_scopes="pii:basic", service_scopes="user:read", redirect_uris=[REDIRECT]
    )
    flow = Flow(behind_local_proxy, engine, tool, user_id)
    answers: dict[str, httpx.Response] = {}
    answers["client_credentials (quick path)"] = flow.token(grant_type="client_credentials")
    answers["client_credentials (Authlib)"] = flow.token(
        grant_type="client_credentials", scope="user:read pii:basic"
    )
    issued = flow.exchange(flow.code("pii:basic"))
    answers["code exchange"] = issued
    tokens = issued.json()
    answers["refresh"] = flow.refresh(tokens["refresh_token"])
    auth = (tool.client_id, tool.client_secret)
    answers["introspect"] = behind_local_proxy.post(
        "/api/oauth/introspect", data={"token": tokens["access_token"]}, auth=auth
    )
    answers["revoke"] = behind_local_proxy.post(
        "/api/oauth/revoke", data={"token": tokens["access_token"]}, auth=auth
    )
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "client_credentials (quick path)": 200,
        "client_credentials (Authlib)": 400,  # invalid_scope: an answer, not a 500
        "code exchange": 200,
        "refresh": 200,
        "introspect": 200,
        "revoke": 200,
    }
    assert answers["client_credentials (Authlib)"].json()["error"] == "invalid_scope"
    assert answers["introspect"].json()["iss"] == PUBLIC
