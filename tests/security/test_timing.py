"""Comparing secrets without telling an attacker how close they came (CWE-208, observable
timing discrepancy; decisions.md, Tokens: tokens, codes and sessions "stored only as a hash
(SHA-256)", client secrets as HMAC-SHA-256, passwords as argon2id).

No stopwatch here (shared machines make timings lie). Instead each test proves the mechanism:
a secret that is checked is checked by `hmac.compare_digest` (spied on while the request runs)
or by argon2's verify; and a secret that is looked up is looked up by its SHA-256 only (the
SQL statements sent, with their parameters, never hold it in clear).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select

from regdesk import security
from regdesk.oauth.models import Application
from tests.api.support import app_engine, statements
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.oauth.support import basic
from tests.oauth.user_flow import Flow
from tests.security.support import new_flow, new_user, unique
from tests.web.support import (
    PASSWORD,
    form,
    log_in,
    make_user,
    session_cookie,
    use_session_cookie,
)

WRONG = "a wrong secret of a plausible length, 43 chars"


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """Every pair of values `hmac.compare_digest` is given while the test runs."""
    calls: list[tuple[Any, Any]] = []
    original = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    return calls


def candidate_digest(engine: Engine, application: Registered, secret: str) -> str:
    """What verify_client_secret computes for `secret` against the stored salted HMAC."""
    with engine.connect() as connection:
        stored = connection.scalar(
            select(Application.secret_hash).where(Application.id == application.id)
        )
    assert stored
    _, salt, _ = stored.split("$")
    return hmac.new(base64.urlsafe_b64decode(salt), secret.encode(), hashlib.sha256).hexdigest()


# --- client secrets: HMAC, compared in constant time ----------------------------------------


def _client_credentials_form(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    form_ = {"grant_type": "client_credentials", "client_id": app.client_id, "client_secret": WRONG}
    response: httpx.Response = client.post("/api/oauth/token", data=form_)
    return response


def _client_credentials_basic(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        headers=basic(app.client_id, WRONG),
    )
    return response


def _client_credentials_slow_path(
    client: TestClient, app: Registered, flow: Flow
) -> httpx.Response:
    """With a field the quick path does not take: Authlib's client authentication."""
    form_ = {
        "grant_type": "client_credentials",
        "client_id": app.client_id,
        "client_secret": WRONG,
        "redirect_uri": "https://x.example/",
    }
    response: httpx.Response = client.post("/api/oauth/token", data=form_)
    return response


def _code_exchange(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": flow.code("pii:basic")},
        auth=(app.client_id, WRONG),
    )
    return response


def _refresh(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    refresh_token = flow.tokens("pii:basic")["refresh_token"]
    response: httpx.Response = client.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token},
        auth=(app.client_id, WRONG),
    )
    return response


def _revoke(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/revoke", data={"token": "x"}, auth=(app.client_id, WRONG)
    )
    return response


def _introspect(client: TestClient, app: Registered, flow: Flow) -> httpx.Response:
    response: httpx.Response = client.post(
        "/api/oauth/introspect", data={"token": "x"}, auth=(app.client_id, WRONG)
    )
    return response


SECRET_CHECKS: dict[str, Callable[[TestClient, Registered, Flow], httpx.Response]] = {
    "client_credentials, form": _client_credentials_form,
    "client_credentials, HTTP Basic": _client_credentials_basic,
    "client_credentials, Authlib's path": _client_credentials_slow_path,
    "authorization_code": _code_exchange,
    "refresh_token": _refresh,
    "revocation": _revoke,
    "introspection": _introspect,
}


@pytest.mark.parametrize("request_", list(SECRET_CHECKS.values()), ids=list(SECRET_CHECKS))
def test_a_wrong_client_secret_is_compared_in_constant_time(
    client: TestClient,
    engine: Engine,
    apps: Apps,
    compared: list[tuple[Any, Any]],
    request_: Callable[[TestClient, Registered, Flow], httpx.Response],
) -> None:
    flow = new_flow(client, apps, engine)
    application = flow.app
    compared.clear()
    response = request_(client, application, flow)
    assert response.status_code == 401, response.text
    candidate = candidate_digest(engine, application, WRONG)
    assert any(candidate in pair for pair in compared), compared


# --- form tokens and cursors: HMACs, compared in constant time ---------------------------


def test_a_wrong_csrf_token_is_compared_in_constant_time(
    client: TestClient, engine: Engine, compared: list[tuple[Any, Any]]
) -> None:
    username, _ = new_user(engine)
    log_in(client, username)
    forged = "f" * 64
    compared.clear()
    response = client.post("/logout", data={"csrf_token": forged})
    assert response.status_code == 403
    assert any(forged.encode() in pair for pair in compared), compared


def test_a_wrong_login_form_token_is_compared_in_constant_time(
    client: TestClient, compared: list[tuple[Any, Any]]
) -> None:
    fields = form(client.get("/login").text, "/login").fields
    forged = "e" * 64
    compared.clear()
    response = client.post("/login", data={**fields, "csrf_token": forged})
    assert response.status_code == 403
    assert any(forged.encode() in pair for pair in compared), compared


def test_a_tampered_cursor_signature_is_compared_in_constant_time(
    client: TestClient, apps: Apps, engine: Engine, compared: list[tuple[Any, Any]]
) -> None:
    new_user(engine)
    new_user(engine)
    auth = bearer(apps.service_token("user:read"))
    cursor = client.post("/api/v0/users/search", json={"limit": 1}, headers=auth).json()["nextPage"]
    payload, _, signature = cursor.rpartition(".")
    forged = f"{payload}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    compared.clear()
    response = client.post("/api/v0/users/search", json={"nextPage": forged}, headers=auth)
    assert response.status_code == 400
    assert compared, "the signature was not compared with hmac.compare_digest"


# --- passwords: argon2 whoever asks ------------------------------------------------------


class CountingHasher:
    """The service's argon2 hasher, noting each hash it verifies a password against."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.verified: list[str] = []

    def hash(self, password: str) -> str:
        return str(self.inner.hash(password))

    def verify(self, stored: str, password: str) -> bool:
        self.verified.append(stored)
        return bool(self.inner.verify(stored, password))


@dataclass(frozen=True)
class LoginAttempt:
    """Who is named, and with what password (`{user}`: a real user without a password...)."""

    login: Callable[[Engine], str]
    password: str


def _existing(engine: Engine) -> str:
    return new_user(engine)[0]


def _without_password(engine: Engine) -> str:
    username = unique("nopass")
    make_user(engine, username, password=None)
    return username


ATTEMPTS = {
    "an existing user, wrong password": LoginAttempt(_existing, "wrong"),
    "an unknown user": LoginAttempt(lambda e: "nobody-at-all", PASSWORD),
    "a user without a password": LoginAttempt(_without_password, PASSWORD),
    "an overlong password": LoginAttempt(_existing, "x" * 5000),
}


@pytest.mark.parametrize("attempt", list(ATTEMPTS.values()), ids=list(ATTEMPTS))
def test_every_failed_login_costs_one_argon2_verification(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, attempt: LoginAttempt
) -> None:
    """Whether the account exists or not (CWE-204/208: no telling who has an account from how
    long the answer takes), the password is checked by argon2, once."""
    login = attempt.login(engine)
    hasher = CountingHasher(security._password_hasher)
    monkeypatch.setattr(security, "_password_hasher", hasher)
    response = log_in(client, login, attempt.password)
    assert response.status_code == 200  # the form again, with the one message for all
    assert len(hasher.verified) == 1, hasher.verified
    assert hasher.verified[0].startswith("$argon2id$")


# --- tokens, codes and sessions: looked up by their SHA-256 -------------------------------


def sent_values(client: TestClient, action: Callable[[], object]) -> str:
    """Every SQL statement, with its parameters, sent while `action` runs, as one text."""
    with statements(app_engine(client)) as sent:
        action()
    return "\n".join(repr(s) for s in sent)


@dataclass(frozen=True)
class Lookup:
    """Makes a secret, then uses it: (the secret, the use)."""

    make: Callable[[TestClient, Engine, Apps], tuple[str, Callable[[], object]]]


def _bearer(client: TestClient, engine: Engine, apps: Apps) -> tuple[str, Callable[[], object]]:
    token = apps.service_token("user:read")
    return token, lambda: client.get("/api/v0/users/1", headers=bearer(token))


def _refresh_token(
    client: TestClient, engine: Engine, apps: Apps
) -> tuple[str, Callable[[], object]]:
    flow = new_flow(client, apps, engine)
    token = flow.tokens("pii:basic")["refresh_token"]
    return token, lambda: flow.refresh(token)


def _code(client: TestClient, engine: Engine, apps: Apps) -> tuple[str, Callable[[], object]]:
    flow = new_flow(client, apps, engine)
    code = flow.code("pii:basic")
    return code, lambda: flow.exchange(code)


def _session(client: TestClient, engine: Engine, apps: Apps) -> tuple[str, Callable[[], object]]:
    username, _ = new_user(engine)
    log_in(client, username)
    cookie = session_cookie(client)
    assert cookie

    def use() -> object:
        use_session_cookie(client, cookie)
        return client.get("/account")

    return cookie, use


def _revoked(client: TestClient, engine: Engine, apps: Apps) -> tuple[str, Callable[[], object]]:
    flow = new_flow(client, apps, engine)
    token = flow.tokens("pii:basic")["access_token"]
    auth = (flow.app.client_id, flow.app.client_secret)
    return token, lambda: client.post("/api/oauth/revoke", data={"token": token}, auth=auth)


def _introspected(
    client: TestClient, engine: Engine, apps: Apps
) -> tuple[str, Callable[[], object]]:
    flow = new_flow(client, apps, engine)
    token = flow.tokens("pii:basic")["refresh_token"]
    auth = (flow.app.client_id, flow.app.client_secret)
    return token, lambda: client.post("/api/oauth/introspect", data={"token": token}, auth=auth)


LOOKUPS = {
    "access token (bearer)": _bearer,
    "refresh token": _refresh_token,
    "authorization code": _code,
    "sign-in session": _session,
    "token to revoke": _revoked,
    "token to introspect": _introspected,
}


@pytest.mark.parametrize("make", list(LOOKUPS.values()), ids=list(LOOKUPS))
def test_a_secret_is_looked_up_by_its_sha256_only(
    client: TestClient,
    engine: Engine,
    apps: Apps,
    make: Callable[[TestClient, Engine, Apps], tuple[str, Callable[[], object]]],
) -> None:
    """An index seek on the hash: no comparison of the secret itself anywhere, in the
    database or in Python, for timing to measure. (An access or refresh token's key is the
    time it begins with, then its SHA-256 in base64url: oauth/tokens.py, token_key.)"""
    secret, use = make(client, engine, apps)
    sent = sent_values(client, use)
    digest = hashlib.sha256(secret.encode()).digest()
    assert digest.hex() in sent or base64.urlsafe_b64encode(digest).rstrip(b"=").decode() in sent
    assert secret not in sent


def test_client_secrets_and_passwords_never_reach_the_database_in_clear(
    client: TestClient, engine: Engine, apps: Apps
) -> None:
    flow = new_flow(client, apps, engine)
    username, _ = new_user(engine)

    def attempts() -> None:
        flow.token(grant_type="client_credentials")
        client.post(
            "/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(flow.app.client_id, WRONG),
        )
        log_in(client, username)
        log_in(client, username, "wrong password typed")

    sent = sent_values(client, attempts)
    for secret in (flow.app.client_secret, WRONG, PASSWORD, "wrong password typed"):
        assert secret not in sent
