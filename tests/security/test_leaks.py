"""No secret leaks into a log, an error or a header (ASVS 4.0 V7.1.1: no credentials in logs,
session tokens only hashed; V7.1.2; V7.4.1: a generic message with an id support can look up;
decisions.md, Errors: "a trace id that is in the server log"; "No error response ever carries
a stack trace, SQL, or another user's data").

Each flow runs with every log record captured at DEBUG (the root logger, so every library's
logger that does not set a level of its own, `regdesk.sql` included) and every response
recorded. Then no password, password hash, client secret, client secret hash, access token,
refresh token, authorization code or session id may appear in any log record, nor in any
response except the one that hands it out (the token response its tokens, the consent
redirect its code, the login's Set-Cookie its session).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError, ProgrammingError

from regdesk.accounts import pages as accounts
from regdesk.oauth import server
from regdesk.oauth.models import Application
from regdesk.users import records as user_records
from regdesk.users.models import User
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.security.support import new_flow, new_user
from tests.web.support import PASSWORD, authorize_params, form, log_in

WRONG_PASSWORD = "a wrong password, typed by mistake"
WRONG_SECRET = "not the secret but close to it, 43 characters"


@dataclass
class Recorded:
    responses: list[httpx.Response] = field(default_factory=list)


@pytest.fixture
def recorded(client: TestClient) -> Iterator[Recorded]:
    """Every response the client receives while the test runs."""
    found = Recorded()

    def keep(response: httpx.Response) -> None:
        response.read()
        found.responses.append(response)

    client.event_hooks["response"].append(keep)
    yield found
    client.event_hooks["response"].remove(keep)


@pytest.fixture
def every_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="regdesk.sql")
    return caplog


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    lines = []
    for record in caplog.records:
        lines.append(f"{record.name} {record.getMessage()}")
        if record.exc_info:
            lines.append("".join(traceback.format_exception(*record.exc_info)))
    return "\n".join(lines)


# --- what a response may rightly hand out ------------------------------------------------


def handed_out(response: httpx.Response) -> set[str]:
    """The secrets this response gives its client, as it should."""
    given: set[str] = set()
    content_type = response.headers.get("content-type", "")
    if response.request.url.path == "/api/oauth/token" and response.status_code == 200:
        body = response.json()
        given |= {body[k] for k in ("access_token", "refresh_token") if k in body}
    location = response.headers.get("location", "")
    if response.request.url.path == "/oauth/authorize" and "code=" in location:
        given |= set(parse_qs(urlsplit(location).query).get("code", []))
    for header in response.headers.get_list("set-cookie"):
        cookie = SimpleCookie(header)
        given |= {morsel.value for morsel in cookie.values() if morsel.value}
    del content_type
    return given


def secrets_of(engine: Engine, responses: list[httpx.Response]) -> set[str]:
    """Everything secret the flow involved: what responses handed out, what is stored about
    users and applications, and what was typed."""
    with engine.connect() as connection:
        stored = set(
            connection.scalars(select(User.password_hash).where(User.password_hash.is_not(None)))
        )
        stored |= set(connection.scalars(select(Application.secret_hash)))
    issued = set().union(*(handed_out(r) for r in responses)) if responses else set()
    return {s for s in stored | issued | {PASSWORD, WRONG_PASSWORD, WRONG_SECRET} if s}


def assert_no_leaks(
    engine: Engine, recorded: Recorded, caplog: pytest.LogCaptureFixture, *extra: str
) -> None:
    responses = recorded.responses
    assert responses, "the flow made no request"
    secrets = secrets_of(engine, responses) | set(extra)
    logged = log_text(caplog)
    for secret in secrets:
        assert secret not in logged, f"a secret is in the log: {secret[:12]}..."
    for response in responses:
        shown = (
            response.text + "\n" + "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
        )
        for secret in secrets - handed_out(response):
            where = f"{response.request.method} {response.request.url.path} {response.status_code}"
            assert secret not in shown, f"a secret in the answer to {where}: {secret[:12]}..."


# --- the flows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    client: TestClient
    engine: Engine
    apps: Apps


def _login(c: Context) -> list[str]:
    username, _ = new_user(c.engine)
    log_in(c.client, username)
    c.client.get("/account")
    return []


def _failed_login(c: Context) -> list[str]:
    username, _ = new_user(c.engine)
    log_in(c.client, username, WRONG_PASSWORD)
    log_in(c.client, "nobody-by-this-name", WRONG_PASSWORD)
    return []


def _consent_and_exchange(c: Context) -> list[str]:
    username, _ = new_user(c.engine)
    application = c.apps.register(obo_scopes="pii:basic", redirect_uris=["https://app.example/cb"])
    log_in(c.client, username)
    page = c.client.get("/oauth/authorize", params=authorize_params(application))
    fields = {**form(page.text, "/oauth/authorize").fields, "decision": "authorize"}
    answer = c.client.post("/oauth/authorize", data=fields, follow_redirects=False)
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    exchange = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": "https://app.example/cb",
    }
    auth = (application.client_id, application.client_secret)
    tokens = c.client.post("/api/oauth/token", data=exchange, auth=auth).json()
    c.client.get("/api/users/current", headers=bearer(tokens["access_token"]))
    c.client.post("/api/oauth/token", data=exchange, auth=auth)  # the replay, refused
    c.client.get("/api/users/current", headers=bearer(tokens["access_token"]))  # revoked
    return [application.client_secret]


def _refresh_and_reuse(c: Context) -> list[str]:
    flow = new_flow(c.client, c.apps, c.engine)
    first = flow.tokens("pii:basic")
    second = flow.refresh(first["refresh_token"]).json()
    flow.refresh(first["refresh_token"])  # reuse: the grant dies
    flow.refresh(second["refresh_token"])
    return [flow.app.client_secret, first["refresh_token"], second["refresh_token"]]


def _client_credentials(c: Context) -> list[str]:
    flow = new_flow(c.client, c.apps, c.engine)
    token = flow.token(grant_type="client_credentials").json()["access_token"]
    flow.token(grant_type="client_credentials", redirect_uri="https://x.example/")  # Authlib's path
    c.client.get("/api/v0/users/1", headers=bearer(token))
    c.client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(flow.app.client_id, WRONG_SECRET),
    )
    c.client.post(
        "/api/oauth/token",
        data={
            "grant_type": "client_credentials",
            "client_id": flow.app.client_id,
            "client_secret": WRONG_SECRET,
            "scope": "no:such",
        },
    )
    return [flow.app.client_secret]


def _revoke_and_introspect(c: Context) -> list[str]:
    flow = new_flow(c.client, c.apps, c.engine)
    other = new_flow(c.client, c.apps, c.engine)
    body = flow.tokens("pii:basic")
    auth = (flow.app.client_id, flow.app.client_secret)
    for endpoint in ("/api/oauth/introspect", "/api/oauth/revoke"):
        for token in (body["access_token"], body["refresh_token"]):
            c.client.post(endpoint, data={"token": token}, auth=auth)
            c.client.post(endpoint, data={"token": token}, auth=(other.app.client_id, WRONG_SECRET))
            c.client.post(
                endpoint, data={"token": token}, auth=(other.app.client_id, other.app.client_secret)
            )
    c.client.get("/api/users/current", headers=bearer(body["access_token"]))
    return [flow.app.client_secret, other.app.client_secret]


def _logout(c: Context) -> list[str]:
    username, _ = new_user(c.engine)
    log_in(c.client, username)
    page = c.client.get("/logout")
    c.client.post("/logout", data=form(page.text, "/logout").fields)
    c.client.get("/account", follow_redirects=False)
    return []


FLOWS: dict[str, Callable[[Context], list[str]]] = {
    "login": _login,
    "failed logins": _failed_login,
    "consent, code exchange, replay": _consent_and_exchange,
    "refresh, reuse": _refresh_and_reuse,
    "client_credentials, right and wrong": _client_credentials,
    "revocation and introspection": _revoke_and_introspect,
    "logout": _logout,
}


@pytest.mark.parametrize("run", list(FLOWS.values()), ids=list(FLOWS))
def test_no_secret_in_any_log_error_or_header(
    client: TestClient,
    engine: Engine,
    apps: Apps,
    recorded: Recorded,
    every_log: pytest.LogCaptureFixture,
    run: Callable[[Context], list[str]],
) -> None:
    extra = run(Context(client, engine, apps))
    assert_no_leaks(engine, recorded, every_log, *extra)


def test_the_logs_were_captured(
    client: TestClient, engine: Engine, every_log: pytest.LogCaptureFixture
) -> None:
    """The capture is not vacuous: the reads of the bearer check are in it, with their
    parameters (the token's hash)."""
    token = Apps(engine, client).service_token("user:read")
    client.get("/api/v0/users/1", headers=bearer(token))
    assert "oauth_access_tokens" in log_text(every_log)


def test_libraries_that_would_log_tokens_stay_quiet_under_a_debug_root(
    every_log: pytest.LogCaptureFixture,
) -> None:
    """Authlib logs every token it issues at DEBUG ("Issue token %r"), SQLAlchemy every row
    it reads (password hashes included): a root logger at DEBUG, as an operator chasing a bug
    sets it, must not switch them on (oauth/server.py keeps Authlib at INFO; SQLAlchemy keeps
    itself at WARNING unless echo is asked for)."""
    assert logging.getLogger().isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("authlib.oauth2.rfc6749.grants").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("sqlalchemy.engine.Engine").isEnabledFor(logging.INFO)


# --- a server error tells the client nothing -----------------------------------------------

INSIDE = "kaboom: SELECT secret FROM oauth_applications -- a trace the client must not see"


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError(INSIDE)


def _database_down(*args: object, **kwargs: object) -> None:
    raise OperationalError(INSIDE, {"secret": WRONG_SECRET}, Exception("connection closed"))


def _bad_sql(*args: object, **kwargs: object) -> None:
    raise ProgrammingError(INSIDE, {"secret": WRONG_SECRET}, Exception("syntax error at FROM"))


@dataclass(frozen=True)
class Failure:
    """Where the service breaks, and a request that gets there."""

    target: tuple[object, str]
    fail: Callable[..., None]
    call: Callable[[TestClient, str], httpx.Response]
    status: int = 500  # 503 (and Retry-After) when the database cannot be reached


def _search(client: TestClient, token: str) -> httpx.Response:
    response: httpx.Response = client.post("/api/v0/users/search", json={}, headers=bearer(token))
    return response


def _get_user(client: TestClient, token: str) -> httpx.Response:
    response: httpx.Response = client.get("/api/v0/users/1", headers=bearer(token))
    return response


def _token(client: TestClient, token: str) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "x"}
    )
    return response


def _login_form(client: TestClient, token: str) -> httpx.Response:
    fields = {**form(client.get("/login").text, "/login").fields, "username": "someone"}
    response: httpx.Response = client.post("/login", data={**fields, "password": PASSWORD})
    return response


FAILURES = {
    "user search, an exception": Failure((user_records, "search_users"), _boom, _search),
    "user search, SQL error": Failure((user_records, "search_users"), _bad_sql, _search),
    "user search, database down": Failure(
        (user_records, "search_users"), _database_down, _search, 503
    ),
    "get user, an exception": Failure((user_records, "user_document"), _boom, _get_user),
    "token endpoint, an exception": Failure(
        (server.RegdeskAuthorizationServer, "create_token_response"), _boom, _token
    ),
    "login form, SQL error": Failure((accounts, "find_by_login"), _bad_sql, _login_form),
    "login form, database down": Failure(
        (accounts, "find_by_login"), _database_down, _login_form, 503
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES.values()), ids=list(FAILURES))
def test_a_server_error_is_the_envelope_and_a_hash_nothing_more(
    client: TestClient,
    apps: Apps,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Failure,
) -> None:
    token = apps.service_token("user:read")
    monkeypatch.setattr(*failure.target, failure.fail)
    caplog.set_level(logging.ERROR)
    response = failure.call(client, token)
    assert response.status_code == failure.status
    body = response.json()
    assert set(body) == {"errors"}
    assert set(body["errors"]) == {"server"}
    assert set(body["errors"]["server"]) == {"hash"}
    trace = body["errors"]["server"]["hash"]
    shown = response.text + str(response.headers)
    for inside in (
        "kaboom",
        "SELECT",
        "Traceback",
        "RuntimeError",
        "OperationalError",
        WRONG_SECRET,
    ):
        assert inside not in shown
    # The operator can find it: the hash and the whole trace are in the log.
    logged = [r for r in caplog.records if trace in r.getMessage()]
    assert logged, "the error's hash is not in the log"
    assert logged[0].exc_info is not None
