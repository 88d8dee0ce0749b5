"""Every API route times every kind of token, with the status each must get (pretix-style).

The table is the API's permission map. `test_the_table_covers_every_route` fails when a route
is added without a row here, so no route can forget its guard.

The routes are tried on one database per backend, loaded and given one token of each kind once
(`table`): minting some thirty tokens through the real endpoints cost more than every route's
requests together. The routes that write (a role given and taken, fox's check-in) do so once,
with the one kind of token allowed to, and every other kind is refused before any write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from sqlalchemy import Engine, delete, insert, update

from regdesk import quick_reads
from regdesk.app import _routes, create_app
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.events.service import current_event_for_writing
from regdesk.oauth.applications import set_suspended
from regdesk.oauth.models import AccessToken, UserPermission
from regdesk.oauth.scopes import SCOPES, Holder
from regdesk.oauth.tokens import token_key
from regdesk.registrations.models import PaymentMethod, Product
from regdesk.registrations.ordering import mark_paid, place_order
from regdesk.registrations.ticket_codes import ticket_of
from tests.client import TestClient
from tests.conftest import BACKENDS, PUBLIC_URL, Apps, bearer, scratch_database_url
from tests.security.conftest import generous_settings
from tests.transfer.support import import_

# The routes outside the bearer guard, each with the reason.
UNGUARDED = {
    ("POST", "/api/oauth/token"): "authenticates the client itself (api.md 4.2)",
    ("POST", "/api/oauth/revoke"): "authenticates the client itself (RFC 7009 2.1)",
    ("POST", "/api/oauth/introspect"): "authenticates the client itself (RFC 7662 2.1)",
    ("GET", "/api/v0/tickets/key"): "public keys, for scanning apps to verify codes offline",
    ("GET", "/api/webhooks/key"): "the public key webhook receivers verify signatures with",
    ("GET", "/api/webhooks/keys"): "the same as a JWKS, with keys inside their overlap",
}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    scope: str  # the scope the route needs
    success: int
    body: dict[str, Any] | None = None
    users_only: bool = False  # on behalf of a user only (api.md 4.8)
    own: str | None = None  # also a user's token with this scope, about its own user only


ROUTES = [
    Route("POST", "/api/v0/volunteers/search", "volunteer:read", 200, {}),
    Route("GET", "/api/v0/users/{user}/volunteer", "volunteer:read", 200),
    Route("GET", "/api/v0/volunteers/departments", "volunteer:read", 200),
    Route("POST", "/api/v0/registration/search", "registration:read", 200, {}),
    # registrations.md, API: a user's con:read token, for its own user ({me}) only.
    Route("GET", "/api/v0/users/{user}/registration", "registration:read", 200, own="con:read"),
    Route("GET", "/api/v0/users/{me}/registration", "registration:read", 200, own="con:read"),
    Route("GET", "/api/users/current/registration", "con:read", 200, users_only=True),
    Route("GET", "/api/users/current/orders", "pii:finance:read", 200, users_only=True),
    Route("GET", "/api/v0/users/{user}", "user:read", 200),
    Route("POST", "/api/v0/users/search", "user:read", 200, {}),
    Route("GET", "/api/v0/roles", "user:read", 200),
    Route("GET", "/api/v0/users/{user}/roles", "user:read", 200),
    Route(
        "PUT", "/api/v0/users/{user}/roles/{role}", "user:roles:update", 200, {"scope": "global"}
    ),
    Route("DELETE", "/api/v0/users/{user}/roles/{role}", "user:roles:update", 204),
    Route("GET", "/api/users/current", "pii:basic", 200, users_only=True),
    # registrations.md, Pages: scanning apps, on behalf of desk staff; fox's (paid) ticket.
    Route("GET", "/api/v0/tickets/{ticket}", "admin:ticket:read", 200, users_only=True),
    Route("POST", "/api/v0/tickets/{ticket}/check-in", "admin:ticket:scan", 200, users_only=True),
    # oidc.md: userinfo, with a user's openid token (its claims follow the token's scopes).
    Route("GET", "/oauth/userinfo", "openid", 200, users_only=True),
    Route("POST", "/oauth/userinfo", "openid", 200, users_only=True),
]
# Bearer-guarded routes outside /api/ (OpenID Connect's paths are its own).
GUARDED_OUTSIDE_API = ("/oauth/userinfo",)

# Route templates as the app declares them, for the coverage check.
DECLARED = {
    "/api/v0/users/{user}/volunteer": "/api/v0/users/{id}/volunteer",
    "/api/v0/users/{user}/registration": "/api/v0/users/{id}/registration",
    "/api/v0/users/{me}/registration": "/api/v0/users/{id}/registration",
    "/api/v0/users/{user}": "/api/v0/users/{id}",
    "/api/v0/users/{user}/roles": "/api/v0/users/{id}/roles",
    "/api/v0/users/{user}/roles/{role}": "/api/v0/users/{id}/roles/{roleId}",
    "/api/v0/tickets/{ticket}": "/api/v0/tickets/{code}",
    "/api/v0/tickets/{ticket}/check-in": "/api/v0/tickets/{code}/check-in",
}

DOCUMENT = {
    "roles": [{"name": "Staff", "staff": True}],
    "users": [
        {"username": "fox", "email": "fox@example.org", "firstName": "Fae", "lastName": "Fox"},
        {
            "username": "boss",
            "email": "boss@example.org",
            "firstName": "Bo",
            "lastName": "Ss",
            "permissions": ["admin"],
        },
    ],
    "departments": [{"name": "Security", "email": "sec@example.org", "leads": ["fox"]}],
    "volunteers": [{"user": "fox", "departments": [{"name": "Security", "states": ["interest"]}]}],
}


def load(engine: Engine) -> dict[str, Any]:
    """DOCUMENT imported, and fox and boss registered (boss's order unpaid, fox's paid): the
    import's ids, and fox's ticket code."""
    ids: dict[str, Any] = import_(engine, DOCUMENT).as_json()
    with write_session(engine) as session:
        event = current_event_for_writing(session)
        product = Product(event_id=event.id, name="attendee", price=6500)
        session.add(product)
        session.flush()
        for name in ("fox", "boss"):
            user = int(ids["users"][name])
            placed = place_order(
                session, Actor("test"), user_id=user, product_id=product.id, currency="USD"
            )
            if name == "fox":
                mark_paid(
                    session, Actor("test"), placed.order, method=PaymentMethod.DESK, reference=None
                )
                ids["ticket"] = ticket_of(session, placed.registration.ticket_code)
    return ids


def path_of(route: Route, ids: dict[str, Any]) -> str:
    """The route's path about fox ({user}), or about boss ({me}), who grants the users' tokens."""
    users = ids["users"]
    return route.path.format(
        user=users["fox"], me=users["boss"], role=ids["roles"]["Staff"], ticket=ids["ticket"]
    )


def test_the_table_covers_every_route(app: FastAPI) -> None:
    declared = {
        (method, route.path)
        for route in iter_route_contexts(app.routes)  # included routers, flattened
        if route.path and route.path.startswith(("/api/", *GUARDED_OUTSIDE_API))
        for method in route.methods or ()
    }
    tabled = {(r.method, DECLARED.get(r.path, r.path)) for r in ROUTES}
    assert declared - set(UNGUARDED) == tabled


TokenMaker = Callable[[Apps, Engine, int], str]


def _service(scope: str) -> TokenMaker:
    return lambda apps, engine, boss: apps.service_token(scope)


def _obo(scope: str) -> TokenMaker:
    """A user's token, granted by an administrator (who may grant every scope)."""

    def make(apps: Apps, engine: Engine, boss: int) -> str:
        return apps.mint(apps.register(obo_scopes=scope), scope, user_id=boss)

    return make


def _expired(apps: Apps, engine: Engine, boss: int) -> str:
    token = apps.service_token(" ".join(n for n, s in SCOPES.items() if s.holder & Holder.SERVICE))
    with engine.begin() as connection:
        connection.execute(
            update(AccessToken)
            .where(AccessToken.token_hash == token_key(token))
            .values(expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
        )
    return token


def _suspended(apps: Apps, engine: Engine, boss: int) -> str:
    every = " ".join(n for n, s in SCOPES.items() if s.holder & Holder.SERVICE)
    registered = apps.register(service_scopes=every)
    token = apps.mint(registered, every)
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), registered.id, True)
    return token


NO_TOKEN = "no token"
KINDS: dict[str, TokenMaker] = {
    NO_TOKEN: lambda apps, engine, boss: "",
    "expired": _expired,
    "suspended app": _suspended,
    **{f"service {n}": _service(n) for n, s in SCOPES.items() if s.holder & Holder.SERVICE},
    **{f"user's {n}": _obo(n) for n in SCOPES},
}


def expected(route: Route, kind: str) -> int:
    if kind in (NO_TOKEN, "expired", "suspended app"):
        return 401
    if route.users_only:
        return route.success if kind == f"user's {route.scope}" else 403
    if route.own is not None and kind == f"user's {route.own}":
        return route.success if "{me}" in route.path else 403
    return route.success if kind.endswith(f" {route.scope}") else 403


def _quick(route: Route) -> bool:
    """Whether the route's endpoint is called directly (quick_reads.py)."""
    return any(
        getattr(declared, "endpoint", None) in quick_reads._QUICK
        and route.method in (declared.methods or ())
        for declared in iter_route_contexts(list(_routes()))
        if declared.path == DECLARED.get(route.path, route.path)
    )


@dataclass(frozen=True)
class Table:
    client: TestClient
    ids: dict[str, Any]  # load's
    tokens: dict[str, str]  # by kind, as KINDS makes them


@pytest.fixture(scope="module", params=BACKENDS)
def table(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Table]:
    """A migrated database with `load`'s records and one token of each kind, and the app on it
    (its rate limits on, but high: the table sends a few thousand requests in a few seconds)."""
    directory = tmp_path_factory.mktemp("db")
    with scratch_database_url(request.param, directory, migrated=True) as url:
        engine = make_engine(url)
        settings = generous_settings(url, public_url=PUBLIC_URL)
        try:
            with TestClient(create_app(settings), base_url=PUBLIC_URL) as client:
                ids = load(engine)
                apps, boss = Apps(engine, client), int(ids["users"]["boss"])
                tokens = {kind: make(apps, engine, boss) for kind, make in KINDS.items()}
                yield Table(client, ids, tokens)
        finally:
            engine.dispose()


@pytest.mark.parametrize(
    ("route", "direct"),
    [
        *((route, True) for route in ROUTES),
        # The quick routes once more with FastAPI's handler alone: both paths, one table.
        *((route, False) for route in ROUTES if _quick(route)),
    ],
    ids=lambda value: (
        f"{value.method} {value.path}"
        if isinstance(value, Route)
        else ("direct" if value else "framework")
    ),
)
def test_route_answers_each_kind_of_token(
    route: Route, direct: bool, table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quick_reads, "DIRECT_CALLS", direct)
    path = path_of(route, table.ids)
    seen = {}
    for kind, token in table.tokens.items():
        headers = bearer(token) if token else {}
        response = table.client.request(route.method, path, headers=headers, json=route.body)
        seen[kind] = response.status_code
        if response.status_code in (401, 403):
            category = "authentication" if response.status_code == 401 else "access"
            assert category in response.json()["errors"], (kind, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer ")
    assert seen == {kind: expected(route, kind) for kind in KINDS}


def test_user_without_the_permission_cannot_use_a_sensitive_scope(
    client: TestClient, apps: Apps, engine: Engine
) -> None:
    ids = import_(engine, DOCUMENT).as_json()
    fox = int(ids["users"]["fox"])
    holds = insert(UserPermission).values(user_id=fox, name="user:read")
    with engine.begin() as connection:  # granted while fox held it, then taken away
        connection.execute(holds)
    token = apps.mint(apps.register(obo_scopes="user:read"), "user:read", user_id=fox)
    with engine.begin() as connection:
        connection.execute(delete(UserPermission).where(UserPermission.user_id == fox))
    assert client.get(f"/api/v0/users/{fox}", headers=bearer(token)).status_code == 403
    with engine.begin() as connection:
        connection.execute(holds)
    assert client.get(f"/api/v0/users/{fox}", headers=bearer(token)).status_code == 200
