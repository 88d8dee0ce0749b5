"""Cross-site request forgery on every HTML form (ASVS 4.0 V4.2.2 and V13.2.3; decisions.md,
Cookies and CSRF).

The forms are found by walking the application's routes (support.page_routes): every POST
outside /api/, the admin pages included, whenever they were added. Each one refuses a POST
without its token, with a token that is not this session's, or that the browser says comes
from another site, with the refusal page (403), and writes nothing. A control then shows that
the same POST with the genuine token is not refused, so the refusals were about the token; and
the forms a visitor uses (login, consent, revoking an application, logout) do their work with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.oauth.models import AuthorizationCode, Grant
from regdesk.web.models import WebSession
from tests.api.support import import_rich
from tests.client import TestClient
from tests.conftest import Apps
from tests.security.support import (
    MODE,
    REFUSED_FORM,
    SIGN_OUT,
    Route,
    assert_page_headers,
    changed_tables,
    new_user,
    other_browser,
    page_routes,
    snapshot,
)
from tests.web.support import (
    PASSWORD,
    authorize_params,
    form,
    forms,
    log_in,
    register_app,
    session_cookie,
    use_session_cookie,
)

LOGIN = "/login"
# Forms sent before anyone signs in: their token pairs with the login form's cookie instead.
BEFORE_SIGN_IN = (
    LOGIN,
    "/login/second-factor",
    "/login/second-factor/security-key",
    "/password/forgot",
    "/password/reset/{token}",
    "/signup",
    "/verify/{token}",
)
# OpenID Connect's end-session takes a POST as a GET, a sign-out with no token (as
# /oauth/logout): an RP's form sends it.
SESSION_FORMS = [
    r for r in page_routes("POST") if r.path not in BEFORE_SIGN_IN and r.path not in SIGN_OUT
]
OTHER_FORMS_BEFORE_SIGN_IN = [
    r for r in page_routes("POST") if r.path in BEFORE_SIGN_IN and r.path != LOGIN
]
FORGED = "0" * 64


@dataclass
class SignedIn:
    """A signed-in administrator: the session cookie and the token of its forms."""

    username: str
    user_id: int
    cookie: str
    token: str


@dataclass
class World:
    admin: SignedIn
    other_admin: SignedIn
    login_token: str  # a login form's token (another purpose than a session's)
    forms: dict[str, dict[str, str]] = field(default_factory=dict)  # action -> fields


def _sign_in(client: TestClient, engine: Engine) -> SignedIn:
    client.cookies.clear()
    username, user_id = new_user(engine, permissions=["admin"])
    assert log_in(client, username).status_code == 303
    cookie = session_cookie(client)
    assert cookie
    token = _fields(client.get("/logout").text, "/logout")["csrf_token"]
    return SignedIn(username, user_id, cookie, token)


def _fields(page: str, action: str) -> dict[str, str]:
    found = [f for f in forms(page) if f.action == action]
    return dict(found[0].fields) if found else {}


@pytest.fixture(scope="module")
def world(client: TestClient, engine: Engine) -> World:
    """Records with id 1 of every kind (the rich import and one application), two signed-in
    administrators, and the fields of every form their pages show, by the form's action."""
    import_rich(engine)
    application = register_app(engine)
    other = _sign_in(client, engine)
    admin = _sign_in(client, engine)
    Apps(engine, client).mint(application, "pii:basic", user_id=admin.user_id)  # to revoke
    # Every page but those that end the session when visited (a GET, by design).
    pages = [route.url() for route in page_routes("GET") if route.path not in SIGN_OUT]
    pages += ["/account", f"/oauth/authorize?{urlencode(authorize_params(application))}"]
    by_action: dict[str, dict[str, str]] = {}
    for page in pages:
        for found in forms(client.get(page).text):
            by_action.setdefault(found.action, dict(found.fields))
    login_token = by_action.get(LOGIN, {}).get("csrf_token") or _login_fields(client)[0]
    return World(admin, other, login_token, by_action)


def form_fields(world: World, route: Route) -> dict[str, str]:
    """What the form posting to `route` sends (the consent form: its Authorize button too)."""
    return {**world.forms.get(route.url(), {}), "decision": "authorize"}


def _login_fields(client: TestClient) -> tuple[str, dict[str, str]]:
    fields = _fields(client.get(LOGIN).text, LOGIN)
    return fields["csrf_token"], fields


# --- the attacks on a signed-in visitor's forms ------------------------------------------


@dataclass(frozen=True)
class Forgery:
    """What the forged POST carries: its token (None: no field), where, and its headers."""

    token: Callable[[World], str | None]
    headers: dict[str, str] = field(default_factory=dict)
    in_query: bool = False


SESSION_FORGERIES = {
    "no token": Forgery(lambda w: None),
    "empty token": Forgery(lambda w: ""),
    "forged token": Forgery(lambda w: FORGED),
    "another session's token": Forgery(lambda w: w.other_admin.token),
    "this session's token, truncated": Forgery(lambda w: w.admin.token[:-1]),
    "this session's token, upper-cased": Forgery(lambda w: w.admin.token.upper()),
    "a login form's token": Forgery(lambda w: w.login_token),
    "token in the query string only": Forgery(lambda w: w.admin.token, in_query=True),
    "cross-site, with the token": Forgery(
        lambda w: w.admin.token, headers={"Sec-Fetch-Site": "cross-site"}
    ),
    "same-site (a sibling subdomain), with the token": Forgery(
        lambda w: w.admin.token, headers={"Sec-Fetch-Site": "same-site"}
    ),
}


def _post(
    client: TestClient, route: Route, fields: dict[str, str], forgery: Forgery, world: World
) -> Any:
    token = forgery.token(world)
    data = {k: v for k, v in fields.items() if k != "csrf_token"}
    params = {}
    if token is not None:
        if forgery.in_query:
            params["csrf_token"] = token
        else:
            data["csrf_token"] = token
    return client.post(
        route.url(), data=data, params=params, headers=forgery.headers, follow_redirects=False
    )


# Which forgery is sent to which form. Every form checks its token in the same place, so
# `make test` sends each form the plainest forgery (no token: a form that forgot the check)
# and one other, in turn, so that every forgery reaches several forms; `make fuzz`
# (REGDESK_HOSTILE_INPUT=full) sends every forgery to every form.
PLAINEST = "no token"


def _sample(routes: list[Route]) -> list[tuple[Route, str]]:
    others = [name for name in SESSION_FORGERIES if name != PLAINEST]
    cases = []
    for i, route in enumerate(routes):
        cases += [(route, PLAINEST), (route, others[i % len(others)])]
    return cases


SESSION_CASES = (
    [(route, name) for route in SESSION_FORMS for name in SESSION_FORGERIES]
    if MODE == "full"
    else _sample(SESSION_FORMS)
)


def test_the_sample_sends_every_form_a_forgery_and_every_forgery_to_several_forms() -> None:
    """What `make test` gives up of the full product, and what it keeps: computed from the
    very cases the test below is parametrised with."""
    assert {route for route, _ in SESSION_CASES} == set(SESSION_FORMS)
    for route in SESSION_FORMS:
        assert (route, PLAINEST) in SESSION_CASES, route
    sent = [name for _, name in SESSION_CASES]
    assert all(sent.count(name) >= min(3, len(SESSION_FORMS)) for name in SESSION_FORGERIES)
    assert len(set(SESSION_CASES)) == len(SESSION_CASES), "a case twice"


@pytest.mark.parametrize(
    ("route", "name"),
    [pytest.param(route, name, id=f"{route}-{name}") for route, name in SESSION_CASES],
)
def test_a_forged_form_is_refused_and_changes_nothing(
    client: TestClient, engine: Engine, world: World, route: Route, name: str
) -> None:
    forgery = SESSION_FORGERIES[name]
    use_session_cookie(client, world.admin.cookie)
    fields = form_fields(world, route)
    before = snapshot(engine)
    response = _post(client, route, fields, forgery, world)
    assert response.status_code == 403, (response.status_code, response.text[:300])
    assert REFUSED_FORM in response.text
    assert_page_headers(response)
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("route", SESSION_FORMS, ids=str)
def test_the_genuine_form_is_not_refused(
    client: TestClient, engine: Engine, world: World, route: Route
) -> None:
    """The control: the same POST with this session's token, from this site, is let through
    (to whatever the form does with it: a redirect, or a page naming a bad field)."""
    fresh = _sign_in(client, engine)  # the action may end the session, or change the record
    fields = form_fields(world, route)
    use_session_cookie(client, fresh.cookie)
    response = client.post(
        route.url(),
        data={**fields, "csrf_token": fresh.token},
        headers={"Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert REFUSED_FORM not in response.text, route
    assert response.status_code < 500, (response.status_code, response.text[:300])
    # RFC 9700 4.12: never a 307 (or 308) after a form: the browser would post it again,
    # credentials included, wherever it is sent.
    assert response.status_code not in (307, 308)


# --- the forms a visitor uses, each on a page of its own, end to end ----------------------


def count(engine: Engine, model: type) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(model)) or 0)


@dataclass
class VisitorForm:
    """A form: how to reach it, what it sends besides its hidden fields, and what would change
    if it were accepted."""

    action: str
    open_page: Callable[[TestClient, Engine, Apps, str, int], str]  # the page holding the form
    sends: Callable[[str], dict[str, str]]  # by the username
    changes: Callable[[Engine], object]


def _login_page(client: TestClient, engine: Engine, apps: Apps, username: str, user_id: int) -> str:
    return client.get("/login").text


def _consent_page(
    client: TestClient, engine: Engine, apps: Apps, username: str, user_id: int
) -> str:
    log_in(client, username)
    registered = register_app(engine)
    return client.get("/oauth/authorize", params=authorize_params(registered)).text


def _account_page(
    client: TestClient, engine: Engine, apps: Apps, username: str, user_id: int
) -> str:
    log_in(client, username)
    registered = register_app(engine)
    apps.mint(registered, "pii:basic", user_id=user_id)
    return client.get("/account").text


def _logout_page(
    client: TestClient, engine: Engine, apps: Apps, username: str, user_id: int
) -> str:
    log_in(client, username)
    return client.get("/logout").text


def _live_grants(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count()).select_from(Grant).where(Grant.revoked_at.is_(None))
            )
            or 0
        )


VISITOR_FORMS = {
    "login": VisitorForm(
        "/login",
        _login_page,
        lambda username: {"username": username, "password": PASSWORD},
        lambda engine: (count(engine, WebSession), count(engine, AuditEvent)),
    ),
    "consent": VisitorForm(
        "/oauth/authorize",
        _consent_page,
        lambda username: {"decision": "authorize"},
        lambda engine: (count(engine, AuthorizationCode), count(engine, AuditEvent)),
    ),
    "revoke": VisitorForm("/account/revoke", _account_page, lambda username: {}, _live_grants),
    "logout": VisitorForm(
        "/logout", _logout_page, lambda username: {}, lambda engine: count(engine, WebSession)
    ),
}


@pytest.mark.parametrize("name", list(VISITOR_FORMS))
def test_a_form_without_its_token_is_refused_and_changes_nothing(
    client: TestClient, engine: Engine, apps: Apps, name: str
) -> None:
    case = VISITOR_FORMS[name]
    username, user_id = new_user(engine)
    page = case.open_page(client, engine, apps, username, user_id)
    fields = {**form(page, case.action).fields, **case.sends(username)}
    genuine_token = fields["csrf_token"]
    assert genuine_token
    before = case.changes(engine)
    without = {k: v for k, v in fields.items() if k != "csrf_token"}
    for sent in (without, {**without, "csrf_token": ""}, {**without, "csrf_token": FORGED}):
        response = client.post(case.action, data=sent, follow_redirects=False)
        assert response.status_code == 403
        assert "Nothing was changed" in response.text
        assert case.changes(engine) == before
    # The genuine form still works: the refusal was about the token, nothing else.
    genuine = client.post(
        case.action, data={**fields, "csrf_token": genuine_token}, follow_redirects=False
    )
    assert genuine.status_code == 303
    assert case.changes(engine) != before


def test_another_sessions_token_is_worthless(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    """... and the refused logout leaves this browser signed in."""
    username, _ = new_user(engine)
    other_username, _ = new_user(engine)
    log_in(client, username)
    other = other_browser(app)
    log_in(other, other_username)
    theirs = form(other.get("/logout").text, "/logout").fields["csrf_token"]
    response = client.post("/logout", data={"csrf_token": theirs}, follow_redirects=False)
    assert response.status_code == 403
    assert client.get("/account", follow_redirects=False).status_code == 200


# --- the login form: no session yet, a signed double-submit cookie ------------------------


def _another_browsers_token(app: FastAPI, client: TestClient) -> tuple[str | None, bool]:
    theirs = other_browser(app)
    return _login_fields(theirs)[0], True


LOGIN_FORGERIES: dict[str, Callable[[FastAPI, TestClient, World], tuple[str | None, bool]]] = {
    # (token sent, whether this browser keeps its own login cookie)
    "no token": lambda app, c, w: (None, True),
    "empty token": lambda app, c, w: ("", True),
    "forged token": lambda app, c, w: (FORGED, True),
    "another browser's token": lambda app, c, w: _another_browsers_token(app, c),
    "a session's token": lambda app, c, w: (w.admin.token, True),
    "the genuine token without its cookie": lambda app, c, w: (_login_fields(c)[0], False),
}


@pytest.mark.parametrize("forgery", list(LOGIN_FORGERIES.values()), ids=list(LOGIN_FORGERIES))
def test_a_forged_login_is_refused_and_signs_no_one_in(
    app: FastAPI,
    client: TestClient,
    engine: Engine,
    world: World,
    forgery: Callable[[FastAPI, TestClient, World], tuple[str | None, bool]],
) -> None:
    """Login CSRF: another site must not sign the visitor in, least of all as the attacker."""
    _login_fields(client)  # this browser has a login cookie of its own
    token, keep_cookie = forgery(app, client, world)
    if not keep_cookie:
        client.cookies.clear()
    data = {"username": world.other_admin.username, "password": PASSWORD}
    if token is not None:
        data["csrf_token"] = token
    before = snapshot(engine)
    response = client.post(LOGIN, data=data, follow_redirects=False)
    assert response.status_code == 403
    assert REFUSED_FORM in response.text
    assert session_cookie(client) is None
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_login_from_another_site_is_refused_even_with_its_token(
    client: TestClient, engine: Engine, world: World, site: str
) -> None:
    _, fields = _login_fields(client)
    data = {**fields, "username": world.other_admin.username, "password": PASSWORD}
    before = snapshot(engine)
    response = client.post(
        LOGIN, data=data, headers={"Sec-Fetch-Site": site}, follow_redirects=False
    )
    assert response.status_code == 403
    assert session_cookie(client) is None
    assert changed_tables(before, snapshot(engine)) == []


def test_the_genuine_login_form_is_not_refused(client: TestClient, world: World) -> None:
    _, fields = _login_fields(client)
    data = {**fields, "username": world.other_admin.username, "password": PASSWORD}
    response = client.post(LOGIN, data=data, follow_redirects=False)
    assert response.status_code == 303  # not 307 (RFC 9700 4.12): the password is not re-sent
    assert session_cookie(client)


# --- the other forms before sign-in (a forgotten password, sign-up): as the login form ------


def _before_sign_in_fields(world: World) -> dict[str, str]:
    """What each of those forms asks, filled in well (each reads its own fields)."""
    return {
        "login": world.other_admin.username,
        "password": "a password long enough",
        "password_again": "a password long enough",
        "username": "newcomer",
        "first_name": "New",
        "last_name": "Comer",
        "email": "newcomer@example.org",
        "born": "1990-01-01",
    }


@pytest.mark.parametrize("forgery", list(LOGIN_FORGERIES.values()), ids=list(LOGIN_FORGERIES))
@pytest.mark.parametrize("route", OTHER_FORMS_BEFORE_SIGN_IN, ids=str)
def test_a_forged_form_before_sign_in_is_refused_and_changes_nothing(
    app: FastAPI,
    client: TestClient,
    engine: Engine,
    world: World,
    route: Route,
    forgery: Callable[[FastAPI, TestClient, World], tuple[str | None, bool]],
) -> None:
    _login_fields(client)
    token, keep_cookie = forgery(app, client, world)
    if not keep_cookie:
        client.cookies.clear()
    data = _before_sign_in_fields(world)
    if token is not None:
        data["csrf_token"] = token
    before = snapshot(engine)
    response = client.post(route.url(), data=data, follow_redirects=False)
    assert response.status_code == 403
    assert REFUSED_FORM in response.text
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
@pytest.mark.parametrize("route", OTHER_FORMS_BEFORE_SIGN_IN, ids=str)
def test_a_form_before_sign_in_from_another_site_is_refused_even_with_its_token(
    client: TestClient, engine: Engine, world: World, route: Route, site: str
) -> None:
    _, fields = _login_fields(client)
    data = {**fields, **_before_sign_in_fields(world)}
    before = snapshot(engine)
    response = client.post(
        route.url(), data=data, headers={"Sec-Fetch-Site": site}, follow_redirects=False
    )
    assert response.status_code == 403
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("route", OTHER_FORMS_BEFORE_SIGN_IN, ids=str)
def test_the_genuine_form_before_sign_in_is_not_refused(
    client: TestClient, world: World, route: Route
) -> None:
    """The control: with the token of the login cookie, the form does its work (a link for
    /password/forgot, an account for /signup; the dead-link page for a made-up token)."""
    _, fields = _login_fields(client)
    data = {**fields, **_before_sign_in_fields(world)}
    response = client.post(route.url(), data=data, follow_redirects=False)
    assert REFUSED_FORM not in response.text
    assert response.status_code in (303, 410), (response.status_code, response.text[:300])
