"""Redirect URI validation (RFC 9700 2.1 and 4.1: exact string matching; RFC 6749 3.1.2.4 and
4.1.2.1: an invalid redirect URI is never redirected to; RFC 6749 4.1.3 and 10.6: the token
endpoint checks it again).

The application registered `https://app.example/cb`. Every near miss below is refused three
times over: the authorization request shows an error page and redirects nowhere; a consent
answer forged to carry it issues no code; and a code issued for the registered address cannot
be exchanged with it.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from sqlalchemy import Engine, func, select

from regdesk.oauth.models import AccessToken, AuthorizationCode
from tests.client import TestClient
from tests.conftest import Apps, Registered
from tests.security.support import new_user
from tests.web.support import CALLBACK, PASSWORD, authorize_params, form, log_in, register_app

NEAR_MISSES = {
    "path suffix": "https://app.example/cb.evil",
    "path continued": "https://app.example/cbevil",
    "host suffix": "https://app.example.evil/cb",
    "another host": "https://evil.example/cb",
    "path prefix only": "https://app.example/c",
    "sub-path": "https://app.example/cb/x",
    "dot segments": "https://app.example/cb/../x",
    "dot segment back to it": "https://app.example/x/../cb",
    "encoded dot segments": "https://app.example/cb/%2E%2E/x",
    "encoded slash then dots": "https://app.example/cb%2F..",
    "encoded slash, lower case": "https://app.example/cb%2f..%2fx",
    "encoded letter": "https://app.example/c%62",
    "encoded NUL": "https://app.example/cb%00",
    "NUL": "https://app.example/cb\x00",
    "encoded space": "https://app.example/cb%20",
    "trailing space": "https://app.example/cb ",
    "leading space": " https://app.example/cb",
    "trailing tab": "https://app.example/cb\t",
    "upper-case host": "https://APP.EXAMPLE/cb",
    "upper-case path": "https://app.example/CB",
    "upper-case scheme": "HTTPS://app.example/cb",
    "trailing slash": "https://app.example/cb/",
    "extra query": "https://app.example/cb?x=1",
    "empty query": "https://app.example/cb?",
    "a second redirect in the query": "https://app.example/cb?redirect_uri=https://evil.example",
    "empty fragment": "https://app.example/cb#",
    "fragment": "https://app.example/cb#frag",
    "default port": "https://app.example:443/cb",
    "another port": "https://app.example:8443/cb",
    "userinfo": "https://user@app.example/cb",
    "registered host as userinfo": "https://app.example@evil.example/cb",
    "backslash": "https://app.example\\@evil.example/cb",
    "semicolon parameters": "https://app.example/cb;evil",
    "http": "http://app.example/cb",
    "scheme-relative": "//app.example/cb",
    "homograph": "https://\u0430pp.example/cb",  # a Cyrillic a
    "javascript": "javascript://app.example/cb%0aalert(1)",
    "empty": "",
}


def codes(engine: Engine, registered: Registered) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count())
                .select_from(AuthorizationCode)
                .where(AuthorizationCode.application_id == registered.id)
            )
            or 0
        )


def assert_error_page_only(response: object, redirect_uri: str) -> None:
    status, headers = getattr(response, "status_code", 0), getattr(response, "headers", {})
    text: str = getattr(response, "text", "")
    assert status == 400, text
    assert "location" not in headers
    assert "The redirect address is not one registered" in text
    assert "evil" not in text
    # Nothing on the page leads there: no form, no link, no form target in the policy.
    assert not [f for f in form_actions(text) if f not in ("/logout",)]
    assert "evil" not in headers.get("content-security-policy", "")
    if redirect_uri.strip():
        assert f'href="{redirect_uri}' not in text


def form_actions(page: str) -> list[str]:
    return [part.split('"', 1)[0] for part in page.split('action="')[1:]]


@pytest.fixture(scope="module")
def signed_in_user(engine: Engine) -> str:
    username, _ = new_user(engine)
    return username


@pytest.mark.parametrize("redirect_uri", list(NEAR_MISSES.values()), ids=list(NEAR_MISSES))
def test_the_authorization_request_shows_an_error_page(
    client: TestClient, engine: Engine, signed_in_user: str, redirect_uri: str
) -> None:
    registered = register_app(engine, redirect_uris=[CALLBACK])
    log_in(client, signed_in_user)
    params = authorize_params(registered, redirect_uri=redirect_uri)
    response = client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert_error_page_only(response, redirect_uri)
    # Even an error that would otherwise go back to the application goes nowhere.
    params = {**params, "response_type": "token", "scope": "no:such"}
    response = client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert_error_page_only(response, redirect_uri)


@pytest.mark.parametrize("redirect_uri", list(NEAR_MISSES.values()), ids=list(NEAR_MISSES))
def test_a_forged_consent_answer_issues_no_code(
    client: TestClient, engine: Engine, signed_in_user: str, redirect_uri: str
) -> None:
    """The consent form carries the request in a hidden field: a user (or a page that got them
    to submit) can change it. The answer is checked like the request."""
    registered = register_app(engine, redirect_uris=[CALLBACK])
    log_in(client, signed_in_user)
    page = client.get("/oauth/authorize", params=authorize_params(registered))
    fields = form(page.text, "/oauth/authorize").fields
    forged = urlencode(authorize_params(registered, redirect_uri=redirect_uri))
    answer = client.post(
        "/oauth/authorize",
        data={**fields, "authorization_request": forged, "decision": "authorize"},
        follow_redirects=False,
    )
    assert_error_page_only(answer, redirect_uri)
    assert codes(engine, registered) == 0


def test_the_untampered_consent_answer_does_issue_a_code(
    client: TestClient, engine: Engine, signed_in_user: str
) -> None:
    """The control for the test above."""
    registered = register_app(engine, redirect_uris=[CALLBACK])
    log_in(client, signed_in_user)
    page = client.get("/oauth/authorize", params=authorize_params(registered))
    fields = {**form(page.text, "/oauth/authorize").fields, "decision": "authorize"}
    answer = client.post("/oauth/authorize", data=fields, follow_redirects=False)
    assert answer.headers["location"].startswith(CALLBACK + "?code=")
    assert codes(engine, registered) == 1


def test_two_redirect_uris_in_one_request_are_refused(
    client: TestClient, engine: Engine, signed_in_user: str
) -> None:
    """RFC 6749 3.1: a parameter sent twice; which one would be used is the attacker's game."""
    registered = register_app(engine, redirect_uris=[CALLBACK])
    log_in(client, signed_in_user)
    for pair in ([CALLBACK, "https://evil.example/cb"], ["https://evil.example/cb", CALLBACK]):
        params = [*authorize_params(registered, redirect_uri=pair[0]).items()]
        params.append(("redirect_uri", pair[1]))
        response = client.get("/oauth/authorize", params=params, follow_redirects=False)
        assert_error_page_only(response, pair[1])


@pytest.mark.parametrize("redirect_uri", list(NEAR_MISSES.values()), ids=list(NEAR_MISSES))
def test_a_code_cannot_be_exchanged_with_another_redirect_uri(
    client: TestClient, engine: Engine, apps: Apps, redirect_uri: str
) -> None:
    """RFC 6749 4.1.3: "ensure that the redirect_uri parameter is present ... and their values
    are identical". No token is issued."""
    username, _ = new_user(engine)
    registered = apps.register(obo_scopes="pii:basic", redirect_uris=[CALLBACK])
    client.cookies.clear()
    page = client.get("/login")
    fields = {**form(page.text, "/login").fields, "username": username, "password": PASSWORD}
    client.post("/login", data=fields)
    consent = client.get("/oauth/authorize", params=authorize_params(registered))
    answer = client.post(
        "/oauth/authorize",
        data={**form(consent.text, "/oauth/authorize").fields, "decision": "authorize"},
        follow_redirects=False,
    )
    code = answer.headers["location"].split("code=", 1)[1].split("&", 1)[0]
    exchange = client.post(
        "/api/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri},
        auth=(registered.client_id, registered.client_secret),
    )
    assert exchange.status_code == 400, exchange.text
    assert exchange.json()["error"] in ("invalid_grant", "invalid_request")
    with engine.connect() as connection:
        issued = connection.scalar(
            select(func.count())
            .select_from(AccessToken)
            .where(AccessToken.application_id == registered.id)
        )
    assert issued == 0
