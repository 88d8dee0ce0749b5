"""Several processes, one deployment (issue 5): two `regdesk serve` on PostgreSQL agree on
everything, because nothing lives in one process's memory that another needs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import Engine

from regdesk.db import make_engine
from regdesk.migrations.runner import upgrade
from tests.conftest import postgres_base_url, scratch_database_url
from tests.helpers import live_server
from tests.oauth.test_code_flow_client_library import (
    CALLBACK,
    PASSWORD,
    authorize_as_user,
    form_with,
    page_forms,
    seed_fox_and_app,
)


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[Engine, str, str]]:
    """Two live servers on one PostgreSQL database."""
    if postgres_base_url() is None:
        pytest.skip("REGDESK_TEST_POSTGRES_URL is not set: PostgreSQL run skipped")
    with scratch_database_url("postgresql", tmp_path) as url:
        engine = make_engine(url)
        upgrade(engine)
        with live_server(url) as first, live_server(url) as second:
            yield engine, first, second
        engine.dispose()


def test_two_processes_share_codes_sessions_and_revocations(
    deployment: tuple[Engine, str, str],
) -> None:
    engine, first, second = deployment
    client_id, secret = seed_fox_and_app(engine, obo_scopes="pii:basic")
    auth = (client_id, secret)

    # The user signs in and consents on the first process...
    authorize = (
        f"{first}/oauth/authorize?client_id={client_id}&response_type=code"
        f"&redirect_uri={CALLBACK}&scope=pii:basic&state=xyz"
    )
    back = authorize_as_user(first, authorize)
    code = parse_qs(urlsplit(back).query)["code"][0]

    # ...and the tool redeems the code on the second.
    tokens = httpx.post(
        f"{second}/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK},
        auth=auth,
    )
    assert tokens.status_code == 200, tokens.text
    access = {"Authorization": f"Bearer {tokens.json()['access_token']}"}
    for base in (first, second):
        assert httpx.get(f"{base}/api/users/current", headers=access).status_code == 200

    # A revocation on the first process is refused on the second at once.
    revoked = httpx.post(
        f"{first}/api/oauth/revoke",
        data={"token": tokens.json()["refresh_token"], "token_type_hint": "refresh_token"},
        auth=auth,
    )
    assert revoked.status_code == 200
    assert httpx.get(f"{second}/api/users/current", headers=access).status_code == 401
    refresh = httpx.post(
        f"{second}/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"]},
        auth=auth,
    )
    assert refresh.json()["error"] == "invalid_grant"


def test_a_session_made_on_one_process_is_honoured_by_the_other(
    deployment: tuple[Engine, str, str],
) -> None:
    engine, first, second = deployment
    seed_fox_and_app(engine)
    with httpx.Client(base_url=first) as browser:
        page = browser.get("/login")
        fields = form_with(page_forms(page.text), "password")
        fields.pop("__action__")
        fields.update(username="fox", password=PASSWORD)
        assert browser.post("/login", data=fields).status_code in (302, 303)
        cookies = browser.cookies
    with httpx.Client(base_url=second, cookies=cookies) as other:
        account = other.get("/account")
        assert account.status_code == 200
        assert "Connected applications" in account.text
