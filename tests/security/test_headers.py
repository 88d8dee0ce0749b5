"""Clickjacking and the other headers of every HTML page (RFC 9700 4.16 and RFC 6749 10.13:
the consent page is never framed; ASVS 4.0 V14.4.1, V14.4.3, V14.4.4, V14.4.6, V14.4.7 and
V8.2.1; decisions.md, Transport).

The pages are found by walking the application's routes (support.page_routes), so a page added
later is checked too, by an anonymous visitor and by a signed-in administrator. Every HTML
answer carries the headers; every one but the static public pages (the home page and the API
documentation, which hold neither a form nor anyone's data) is `no-store`. The answers a walk
of GET routes does not meet (a failed or held-up login, a refused form, the consent screen for
a sensitive scope, an invalid request) carry them too, and our own pages need no script, no
inline style and no third party.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode

import httpx
import pytest
from sqlalchemy import Engine, select

from regdesk.accounts.links import LinkPurpose, issue_link
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.events.service import current_event_for_writing
from regdesk.oauth.scopes import SCOPES, Holder
from regdesk.registrations.models import Order, PaymentMethod, Product, Registration
from regdesk.registrations.ordering import mark_paid, place_order
from regdesk.registrations.ticket_codes import ticket_of
from regdesk.users.service import find_by_login
from tests.api.support import import_rich
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.security.support import (
    SIGN_OUT,
    Route,
    assert_page_headers,
    new_user,
    page_routes,
    routes,
)
from tests.web.support import authorize_params, form, forms, log_in, register_app

STATIC_PUBLIC = {"/", "/docs", "/redoc", "/docs/oauth2-redirect"}


@pytest.fixture(scope="module")
def records(engine: Engine) -> str:
    """A record of every kind with id 1 (the pages' `{id}`), and an application's consent URL."""
    import_rich(engine)
    with write_session(engine) as session:  # user 1's registration
        attendee = Product(event_id=current_event_for_writing(session).id, name="a", price=0)
        session.add(attendee)
        session.flush()
        place_order(session, Actor("test"), user_id=1, product_id=attendee.id, currency="USD")
    application = register_app(engine, "pii:basic user:read")
    return f"/oauth/authorize?{urlencode(authorize_params(application, 'pii:basic user:read'))}"


def visit(client: TestClient, engine: Engine, url: str, signed_in: bool) -> object:
    if signed_in:
        username, _ = new_user(engine, permissions=["admin"])
        assert log_in(client, username).status_code == 303
    return client.get(url, follow_redirects=False)


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "administrator"])
@pytest.mark.parametrize("route", page_routes("GET"), ids=str)
def test_every_html_page_carries_the_security_headers(
    client: TestClient, engine: Engine, records: str, route: Route, signed_in: bool
) -> None:
    response = visit(client, engine, route.url(), signed_in)
    status = getattr(response, "status_code", 0)
    headers = getattr(response, "headers", {})
    assert status < 500, status
    if headers.get("content-type", "").startswith("text/html"):
        assert_page_headers(response, no_store=route.path not in STATIC_PUBLIC)  # type: ignore[arg-type]
    elif headers.get("content-disposition", "").startswith("attachment"):
        # A download (the badge printer's CSV): saved, never shown or kept by a cache.
        assert signed_in, (status, headers)
        assert status == 200, (status, headers)
        assert headers["cache-control"] == "no-store"
        assert headers["x-content-type-options"] == "nosniff"
    else:
        # Not a page: a redirect (to log in first) or a refusal, never content to frame.
        assert status in (301, 302, 303, 307, 308, 401, 403, 404), (status, headers)


PageVisit = Callable[[TestClient, Engine, str, str], httpx.Response]  # fox, owl: usernames


def _signed_in(path: str, **params: str) -> PageVisit:
    def visit(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
        log_in(client, fox)
        return client.get(path, params=params)

    return visit


def _consent(sensitive: bool) -> PageVisit:
    def visit(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
        log_in(client, fox)
        scope = "pii:basic user:read" if sensitive else "pii:basic"
        return client.get("/oauth/authorize", params=authorize_params(register_app(engine), scope))

    return visit


def _lacking(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
    log_in(client, owl)
    params = authorize_params(register_app(engine), "user:read")
    return client.get("/oauth/authorize", params=params)


def _anonymous(path: str, method: str = "GET", **params: str) -> PageVisit:
    def visit(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
        return client.request(method, path, params=params)

    return visit


def _reset_link(engine: Engine, login: str) -> str:
    with write_session(engine) as session:
        user = find_by_login(session, login)
        assert user is not None
        return f"/password/reset/{issue_link(session, user.id, LinkPurpose.RESET_PASSWORD)}"


def _reset_form(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
    return client.get(_reset_link(engine, fox))


def _reset_refused(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
    link = _reset_link(engine, fox)
    fields = forms(client.get(link).text)[0].fields
    return client.post(link, data={**fields, "password": "short", "password_again": "short"})


def _change_refused(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
    log_in(client, fox)
    fields = form(client.get("/account").text, "/account/password").fields
    return client.post("/account/password", data={**fields, "current_password": "wrong"})


def _throttled(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
    for _ in range(6):
        response = log_in(client, fox, "wrong")
    return response


def _at_the_desk(path: str, *, sale_refused: bool = False) -> PageVisit:
    """A desk staff member on a desk page, with a paid, checked-in registration (owl's) to
    show: its badge (`{id}`), the batch of badges, the statistics; or the sale form sent
    without a product."""

    def visit(client: TestClient, engine: Engine, fox: str, owl: str) -> httpx.Response:
        with write_session(engine) as session:
            event = current_event_for_writing(session)
            product = Product(event_id=event.id, name=f"desk-{owl}", price=6500)
            session.add(product)
            session.flush()
            owl_id = find_by_login(session, owl).id  # type: ignore[union-attr]
            placed = place_order(
                session, Actor("test"), user_id=owl_id, product_id=product.id, currency="USD"
            )
            mark_paid(
                session, Actor("test"), placed.order, method=PaymentMethod.DESK, reference=None
            )
            placed.registration.checked_in_at = placed.order.paid_at
        desk_staff, _ = new_user(engine, permissions=["registration:desk"])
        log_in(client, desk_staff)
        if sale_refused:
            fields = next(f for f in forms(client.get(path).text) if f.method == "post").fields
            return client.post(path, data={**fields, "person": "new"})
        return client.get(path.replace("{id}", str(placed.registration.id)))

    return visit


PAGE_STATES: dict[str, tuple[PageVisit, int]] = {
    "login": (_anonymous("/login"), 200),
    "login-failed": (lambda c, e, fox, owl: log_in(c, fox, "wrong"), 200),
    "login-throttled": (_throttled, 429),
    "logout-confirm": (_signed_in("/logout"), 200),
    "signed-out": (_anonymous("/logout"), 200),
    "account": (_signed_in("/account"), 200),
    "consent": (_consent(sensitive=False), 200),
    "consent-sensitive": (_consent(sensitive=True), 200),
    "invalid-request-client": (_anonymous("/oauth/authorize", client_id="404"), 400),
    "invalid-request-permission": (_lacking, 400),
    "forbidden": (_anonymous("/login", "POST"), 403),
    "oauth-logout": (_anonymous("/oauth/logout"), 200),
    "password-forgot": (_anonymous("/password/forgot"), 200),
    "password-forgot-sent": (_anonymous("/password/forgot", sent=""), 200),
    "password-reset": (_reset_form, 200),
    "password-reset-refused": (_reset_refused, 400),
    "password-link-dead": (_anonymous("/password/reset/no-such-link"), 410),
    "account-password-refused": (_change_refused, 400),
    "desk-badge": (_at_the_desk("/desk/registrations/{id}/badge"), 200),
    "desk-badges": (_at_the_desk("/desk/badges?printed=any"), 200),
    "desk-stats": (_at_the_desk("/desk/stats"), 200),
    "desk-sale-refused": (_at_the_desk("/desk/sale", sale_refused=True), 400),
}


@pytest.mark.parametrize("name", list(PAGE_STATES))
def test_every_page_carries_the_security_headers(
    client: TestClient, engine: Engine, name: str
) -> None:
    """Each kind of answer a visitor meets, the states the walk above cannot reach included:
    the headers, the whole policy, and a page that needs nothing the policy forbids."""
    fox, _ = new_user(engine, permissions=["user:read"])
    owl, _ = new_user(engine)
    visit, status = PAGE_STATES[name]
    response = visit(client, engine, fox, owl)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-frame-options"] == "DENY"
    policy = [p.strip() for p in response.headers["content-security-policy"].split(";")]
    assert "frame-ancestors 'none'" in policy
    assert "default-src 'self'" in policy
    assert "script-src 'none'" in policy
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"

    page = response.text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<html lang="en">' in page
    assert "<script" not in page
    assert "style=" not in page
    assert "<style" not in page
    assert not re.search(r"""(?:src|href|action)=["'](?:https?:)?//""", page)  # no third party
    for field_id in re.findall(r'<input id="([^"]+)"', page):
        assert f'<label for="{field_id}">' in page


def test_the_api_documentation_is_not_framed_either_but_keeps_its_script(
    client: TestClient,
) -> None:
    docs = client.get("/docs")
    assert docs.headers["x-frame-options"] == "DENY"
    assert docs.headers["referrer-policy"] == "no-referrer"
    policy = docs.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "default-src" not in policy  # Swagger UI starts with an inline script


def test_the_consent_screen_cannot_be_framed(
    client: TestClient, engine: Engine, records: str
) -> None:
    """Clickjacking's prize: the Authorize button, sensitive scopes included."""
    username, _ = new_user(engine, permissions=["user:read"])
    log_in(client, username)
    response = client.get(records, follow_redirects=False)
    assert response.status_code == 200, response.text
    assert "Authorize" in response.text
    assert_page_headers(response)
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy


def test_some_pages_were_html(client: TestClient, engine: Engine, records: str) -> None:
    """The walk is not vacuous: most pages answer HTML to an administrator."""
    username, _ = new_user(engine, permissions=["admin"])
    log_in(client, username)
    pages = [r for r in page_routes("GET") if r.path not in SIGN_OUT]  # they sign out
    html = [
        route
        for route in pages
        if client.get(route.url(), follow_redirects=False)
        .headers.get("content-type", "")
        .startswith("text/html")
    ]
    assert len(html) >= len(pages) * 3 // 4, sorted(set(pages) - set(html), key=str)


# --- the API ---------------------------------------------------------------------------------

API_BODIES = {"POST": {}, "PUT": {"scope": "convention"}}


@pytest.fixture(scope="module")
def ticket(engine: Engine, records: str) -> str:
    """User 1's ticket (the `{code}` of the ticket routes), its order paid: it checks in."""
    with write_session(engine) as session:
        order = session.scalars(select(Order).where(Order.user_id == 1)).one()
        mark_paid(session, Actor("test"), order, method=PaymentMethod.DESK, reference=None)
        registration = session.scalars(select(Registration).where(Registration.user_id == 1))
        return ticket_of(session, registration.one().ticket_code)


@pytest.mark.parametrize("route", [r for r in routes() if r.path.startswith("/api/v")], ids=str)
def test_no_answer_of_the_api_is_kept_by_a_cache(
    client: TestClient, engine: Engine, records: str, ticket: str, route: Route
) -> None:
    """People's records and the errors about them: `no-store`, whoever asks (ASVS V8.2.1).
    Asked by a service holding every scope a service may hold, and by an administrator's
    application holding every scope only users grant (the ticket scanners')."""
    apps = Apps(engine, client)
    every = " ".join(name for name, scope in SCOPES.items() if scope.holder & Holder.SERVICE)
    service = apps.service_token(every)
    users_only = " ".join(n for n, scope in SCOPES.items() if not scope.holder & Holder.SERVICE)
    _, admin = new_user(engine, permissions=["admin"])
    user = apps.mint(apps.register(obo_scopes=users_only), users_only, user_id=admin)
    url = route.url(ticket) if "{code}" in route.path else route.url()
    statuses = set()
    for headers in ({}, bearer("invalid"), bearer(service), bearer(user)):
        answer = client.request(
            route.method, url, json=API_BODIES.get(route.method), headers=headers
        )
        statuses.add(answer.status_code)
        assert answer.headers.get("cache-control") == "no-store", (route, answer.status_code)
    assert statuses & {200, 204}, statuses  # the record itself was among the answers


def test_no_answer_about_the_current_user_is_kept_by_a_cache(
    client: TestClient, engine: Engine
) -> None:
    _, user_id = new_user(engine)
    tool = Apps(engine, client).register(obo_scopes="pii:basic pii:email pii:phone pii:address")
    token = Apps(engine, client).mint(
        tool, "pii:basic pii:email pii:phone pii:address", user_id=user_id
    )
    for headers in ({}, bearer(token)):
        answer = client.get("/api/users/current", headers=headers)
        assert answer.headers.get("cache-control") == "no-store", answer.status_code
    assert answer.status_code == 200
