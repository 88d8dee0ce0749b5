"""Several processes, one deployment (issues 5 and 6): two `regdesk serve` on one database
agree on everything, because nothing lives in one process's memory that another needs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import text

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.demo import load_demo
from regdesk.oauth.applications import create_application, set_suspended
from tests import http_calls
from tests.conftest import BACKENDS, postgres_base_url, scratch_database_url
from tests.helpers import live_servers
from tests.oauth.test_code_flow_client_library import (
    CALLBACK,
    PASSWORD,
    authorize_as_user,
    form_with,
    page_forms,
    seed_fox_and_app,
)


@dataclass(frozen=True)
class Deployment:
    first: str
    second: str
    client_id: str  # the Schedule App's, asking fox for pii:basic
    secret: str


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Two live servers on one PostgreSQL database, with fox and the Schedule App: the tests
    below share them, each with a sign-in and a grant of its own."""
    if postgres_base_url() is None:
        pytest.skip("REGDESK_TEST_POSTGRES_URL is not set: PostgreSQL run skipped")
    directory = tmp_path_factory.mktemp("multiprocess")
    with scratch_database_url("postgresql", directory, migrated=True) as url:
        engine = make_engine(url)
        client_id, secret = seed_fox_and_app(engine, obo_scopes="pii:basic")
        engine.dispose()
        with live_servers(url, 2) as (first, second):
            yield Deployment(first, second, client_id, secret)


def test_two_processes_share_codes_sessions_and_revocations(deployment: Deployment) -> None:
    first, second, client_id = deployment.first, deployment.second, deployment.client_id
    auth = (client_id, deployment.secret)

    # The user signs in and consents on the first process...
    authorize = (
        f"{first}/oauth/authorize?client_id={client_id}&response_type=code"
        f"&redirect_uri={CALLBACK}&scope=pii:basic&state=xyz"
    )
    back = authorize_as_user(first, authorize)
    code = parse_qs(urlsplit(back).query)["code"][0]

    # ...and the tool redeems the code on the second.
    tokens = http_calls.post(
        f"{second}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK},
        auth=auth,
    )
    assert tokens.status_code == 200, tokens.text
    access = {"Authorization": f"Bearer {tokens.json()['access_token']}"}
    for base in (first, second):
        assert http_calls.get(f"{base}/api/users/current", headers=access).status_code == 200

    # A revocation on the first process is refused on the second at once.
    revoked = http_calls.post(
        f"{first}/api/oauth/revoke",
        data={"token": tokens.json()["refresh_token"], "token_type_hint": "refresh_token"},
        auth=auth,
    )
    assert revoked.status_code == 200
    assert http_calls.get(f"{second}/api/users/current", headers=access).status_code == 401
    refresh = http_calls.post(
        f"{second}/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"]},
        auth=auth,
    )
    assert refresh.json()["error"] == "invalid_grant"


def test_a_session_made_on_one_process_is_honoured_by_the_other(deployment: Deployment) -> None:
    first, second = deployment.first, deployment.second
    with http_calls.client(base_url=first) as browser:
        page = browser.get("/login")
        fields = form_with(page_forms(page.text), "password")
        fields.pop("__action__")
        fields.update(username="fox", password=PASSWORD)
        assert browser.post("/login", data=fields).status_code in (302, 303)
        cookies = browser.cookies
    with http_calls.client(base_url=second, cookies=cookies) as other:
        account = other.get("/account")
        assert account.status_code == 200
        assert "Connected applications" in account.text


@pytest.fixture(params=BACKENDS)
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """Two live servers on one database of either kind, with a small demo loaded."""
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        load_demo(engine, users=30, volunteers=10, seed=3, actor=Actor("test"))
        engine.dispose()
        with live_servers(url, 2) as (first, second):
            yield url, first, second


def test_every_process_refuses_a_revoked_or_suspended_token_on_its_next_request(
    two_processes: tuple[str, str, str],
) -> None:
    """Each process reads the token's state from the database on every request (the event
    loop's own connection, db.LoopReads): nothing cached to go stale in another process."""
    url, first, second = two_processes
    engine = make_engine(url)
    with write_session(engine) as session:
        app, secret = create_application(
            session, Actor("test"), name="Clock", service_scopes="user:read volunteer:read"
        )
        client_id = app.id
    auth = (str(client_id), secret)

    def token_from(base: str) -> dict[str, str]:
        answer = http_calls.post(
            f"{base}/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth
        )
        assert answer.status_code == 200, answer.text
        return {"Authorization": f"Bearer {answer.json()['access_token']}"}

    def reads(base: str, bearer: dict[str, str]) -> set[int]:
        return {
            http_calls.get(f"{base}/api/v0/users/1", headers=bearer).status_code,
            http_calls.post(
                f"{base}/api/v0/volunteers/search", headers=bearer, json={}
            ).status_code,
        }

    # A token issued on one process works on both; revoked on the other, refused on both.
    bearer = token_from(first)
    assert reads(first, bearer) == reads(second, bearer) == {200}
    token = bearer["Authorization"].removeprefix("Bearer ")
    revoked = http_calls.post(f"{second}/api/oauth/revoke", data={"token": token}, auth=auth)
    assert revoked.status_code == 200
    assert reads(first, bearer) == reads(second, bearer) == {401}

    # Suspended (by the CLI's service, a third process's write): refused everywhere at once,
    # and no process issues it a new token; reinstated, it gets one again.
    bearers = [token_from(first), token_from(second)]
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), client_id, True)
    for base in (first, second):
        for each in bearers:
            assert reads(base, each) == {401}
        refused = http_calls.post(
            f"{base}/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth
        )
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_client"
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), client_id, False)
    assert reads(second, token_from(first)) == {200}

    # A change to a user written elsewhere shows in the next read on both processes.
    bearer = token_from(first)
    with engine.begin() as connection:
        connection.execute(text("UPDATE users SET first_name = 'Rewritten' WHERE id = 1"))
    for base in (first, second):
        user = http_calls.get(f"{base}/api/v0/users/1", headers=bearer).json()
        assert user["firstName"] == "Rewritten"
    engine.dispose()
