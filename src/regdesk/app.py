"""create_app(settings): the ASGI application. Routers and middleware, nothing else."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.routing import APIRoute, _IncludedRouter
from fastapi_offline import FastAPIOffline
from sqlalchemy import Engine, text
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match
from starlette.types import Scope
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from regdesk import __version__, documents, keys, oidc
from regdesk.accounts import factor_pages, password_pages, second_step_pages, signup_pages
from regdesk.accounts import pages as account_pages
from regdesk.accounts.factors import has_second_factor
from regdesk.accounts.routes import router as current_user_router
from regdesk.admin.routes import router as admin_router
from regdesk.bodies import BodyLimits
from regdesk.config import Settings, load_settings
from regdesk.db import is_sqlite, make_engine, write_session
from regdesk.db.driver import GroupedWrites, LoopReads
from regdesk.db.instance import instance_secret_key
from regdesk.departments.routes import router as departments_router
from regdesk.desk import tickets as ticket_api
from regdesk.desk.routes import ROUTERS as DESK_ROUTERS
from regdesk.errors import install_error_handlers
from regdesk.mail.service import CHANNEL as MAIL_CHANNEL
from regdesk.mail.service import mail_channel
from regdesk.migrations.readiness import unready
from regdesk.models import DOCUMENTS
from regdesk.oauth.quick_grant import NEW_TOKEN, KnownClients, QuickTokens
from regdesk.oauth.routes import router as oauth_router
from regdesk.observability import routes as metrics_routes
from regdesk.observability.backlog import OutboxBacklog
from regdesk.observability.database_errors import count_database_errors
from regdesk.observability.observed import observe_every_request
from regdesk.observability.telemetry import TELEMETRY_OFF
from regdesk.outbox.runner import Runner
from regdesk.pagination import Cursors
from regdesk.ratelimit import RateLimitHeaders, RateLimits
from regdesk.registrations.routes import router as registrations_router
from regdesk.registrations.ticket_codes import TicketKeys, ensure_key
from regdesk.roles.routes import router as roles_router
from regdesk.schemas import add_request_models
from regdesk.transport import TransportPolicy, proxy_list
from regdesk.users.routes import router as users_router
from regdesk.volunteers.routes import router as volunteers_router
from regdesk.web import consent, registering, volunteering
from regdesk.web.access_log import AccessLines
from regdesk.web.headers import SecurityHeaders
from regdesk.web.pages import STATIC_DIRECTORY, STATIC_PATH, static_files
from regdesk.web.visitor import PageRefused, refused_page
from regdesk.webhooks import capture as webhook_events
from regdesk.webhooks import routes as webhook_routes
from regdesk.webhooks.capture import CHANNEL as WEBHOOK_CHANNEL
from regdesk.webhooks.delivery import Sender

TITLE = "regdesk"
DESCRIPTION = """\
Registration service for fan conventions: users, volunteers, departments and roles, with
OAuth 2.0 bearer tokens. Every API request carries `Authorization: Bearer <token>`; get a
token from `POST /api/oauth/token`. Errors come in one envelope,
`{"errors": {"<category>": {"message": "..."}}}`.
"""


# Routing tries each route in turn: the API's reads first, the most called first (the current
# user: every OBO client's sign-in), then the token endpoint and the rest of the API.
ROUTERS = (
    current_user_router,
    users_router,
    registrations_router,
    volunteers_router,
    departments_router,
    oauth_router,
    roles_router,
    ticket_api.router,
    account_pages.router,
    password_pages.router,
    signup_pages.router,
    factor_pages.router,
    second_step_pages.router,
    consent.router,
    oidc.router,
    oidc.pages,
    volunteering.router,
    registering.router,
    admin_router,
    *DESK_ROUTERS,
    webhook_routes.router,
    metrics_routes.router,
)
# The outbox's channels whose backlog /metrics shows.
OUTBOX_CHANNELS = (MAIL_CHANNEL, WEBHOOK_CHANNEL)


@cache
def _routes() -> tuple[BaseRoute, ...]:
    """Every router, included once per process, its routes' handlers (their dependencies,
    their models) built here (`_build`): an app made later (the tests make one per test)
    shares them. The routes read everything of their app from the request
    (`request.app.state`), never from here."""
    table = APIRouter()
    routes: list[BaseRoute] = []
    for router in ROUTERS:
        flat = [route for route in router.routes if isinstance(route, APIRoute)]
        if len(flat) == len(router.routes):
            # Its own routes, as they are: an included router is matched twice per request,
            # through every router before it, which was a tenth of a record read's time.
            routes.extend(_passed_over_by_prefix(route) for route in flat)
        else:
            table.include_router(router)
            (included,) = table.routes
            assert isinstance(included, _IncludedRouter)
            routes.append(Section.of(included, router.prefix) if router.prefix else included)
            table.routes.clear()
    for route in routes:
        if isinstance(route, _IncludedRouter):
            _build(route)
    return tuple(routes)


def _passed_over_by_prefix(route: APIRoute) -> APIRoute:
    """`route`, answering "no match" at once to a path that does not begin with the literal
    part of its own (what comes before its first parameter): its pattern could not match such a
    path. Routing asks each route in turn, and a route's full check (the path as routed, the
    framework's context, the regular expression) took about a microsecond: a page of
    volunteers, sixteenth in line, spent 18 µs being routed. Only for a route of its own in the
    table (`_routes`), whose path is the one it is matched by."""
    literal = route.path.split("{", 1)[0]
    matches = route.matches

    def prefixed(scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not get_route_path(scope).startswith(literal):
            return Match.NONE, {}
        return matches(scope)

    route.matches = prefixed  # type: ignore[method-assign]
    return route


def _build(included: _IncludedRouter) -> None:
    """Build now what FastAPI builds of an included router's routes when a request first meets
    them (each route's handler again, under the router's prefix and dependencies): at a
    server's start, before its heap is set aside, and once in a process that forks servers
    (the tests' fork server), rather than in each of them, at its first request."""
    for candidate in included.effective_candidates():
        if isinstance(candidate, _IncludedRouter):
            _build(candidate)
    included.effective_low_priority_routes()


@dataclass
class Section(_IncludedRouter):
    """A router of routers (the admin area), passed over at once by a path outside its prefix.
    Routing asks each route in turn, and an included router each of its own: a path after the
    admin area's 70 routes (`/healthz`, `/metrics`) or matching none (a 404) was asked of all
    of them, half of its time. Every route of the router starts with its prefix (FastAPI puts
    it before each), so none is passed over that could match. It is FastAPI's included router
    otherwise, so that what lists the routes (`iter_route_contexts`: the `Allow` of a 405, the
    permission tables' tests) still finds each of the section's."""

    prefix: str = "/"

    @classmethod
    def of(cls, included: _IncludedRouter, prefix: str) -> Section:
        return cls(included.original_router, included.include_context, prefix=prefix)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if not get_route_path(scope).startswith(self.prefix):
            return Match.NONE, {}
        return super().matches(scope)


def serving_app() -> FastAPI:
    """The app `regdesk serve` runs (uvicorn's factory, in each worker): `create_app`, whose
    start ends by setting the heap aside (`settle_heap`)."""
    return create_app(serving=True)


def settle_heap() -> None:
    """What the start made lives as long as the process (modules, routes, models: about 200,000
    objects the collector tracks). Collected once and then frozen, it is left out of every
    later collection; otherwise each full collection walks all of it, 90 ms with the event loop
    stopped, often enough to be the token grant's p99 (docs/development/performance.md)."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings | None = None, *, serving: bool = False) -> FastAPI:
    """The app on `settings` (the environment's by default). `serving`: the process runs this
    app and nothing else (`serving_app`); tests, which make an app per test, leave it off."""
    settings = settings or load_settings()
    engine = make_engine(settings.database_url)
    # The access log of `regdesk serve` (uvicorn's own is off: web/access_log.py).
    access = AccessLines(settings.log_format) if serving and settings.access_log == "on" else None
    documents.install(DOCUMENTS)  # every write keeps the record documents in step
    webhook_events.install()  # and writes the webhook events of what it changed

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Requests' writes take turns on SQLite (deps._write_turn), on this loop.
        app.state.write_turn = asyncio.Lock() if is_sqlite(engine) else None
        app.state.secret_key = instance_secret_key(engine, settings.secret_key)
        app.state.cursors = Cursors(app.state.secret_key)
        keys.install(engine, app.state.secret_key)  # the key store encrypts with it
        with write_session(engine) as db:
            ensure_key(db)  # the ticket key made once: showing a ticket never writes
            oidc.ensure_keys(db)  # and the ID token keys: the JWKS never writes either
        webhooks = Sender(
            engine,
            issuer=settings.issuer,
            allow_private=settings.webhooks_allow_private == "on",
        )
        outbox = _outbox_runner(settings, engine, webhooks, app.state.secret_key)
        outbox.start()
        if serving:
            settle_heap()
        yield
        if serving:
            gc.unfreeze()
        outbox.stop()
        webhooks.close()
        await app.state.loop_reads.aclose()
        await app.state.loop_writes.aclose()
        engine.dispose()
        if access is not None:
            access.close()

    app = FastAPIOffline(
        telemetry=TELEMETRY_OFF,
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.has_second_factor = has_second_factor  # asked by web/staff_factor.py
    app.state.engine = engine
    app.state.loop_reads = LoopReads(engine)
    app.state.loop_writes = LoopReads(engine, writer=True)
    app.state.new_tokens = GroupedWrites(app.state.loop_writes, NEW_TOKEN)
    app.state.known_clients = KnownClients()  # the quick grant's applications, as last read
    app.state.grant_extensions = oidc.grant_extensions()  # the ID token (oauth/server.py)
    app.state.ticket_keys = TicketKeys()  # ticket codes' public keys, read at most once a minute
    app.state.rate_limits = RateLimits.from_settings(settings)
    app.state.outbox_backlog = OutboxBacklog(engine, OUTBOX_CHANNELS)  # read by /metrics
    if app.state.rate_limits is not None:
        app.add_middleware(RateLimitHeaders)
    install_error_handlers(app)
    app.add_exception_handler(PageRefused, refused_page)
    count_database_errors(app)  # after the last handler: each that renders one counts it
    app.openapi = _openapi  # type: ignore[method-assign]
    # Before the API documentation's five (/openapi.json, /docs...), which FastAPI puts first
    # and which every other request was matched against in vain.
    app.router.routes[:0] = _routes()
    app.mount(STATIC_PATH, static_files(), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(QuickTokens)  # before routing, after the transport rules
    app.add_middleware(BodyLimits)  # before anything reads a body, after the transport rules
    # Outermost last: proxies' headers are read first, then the transport rules apply.
    app.add_middleware(TransportPolicy, allowed_hosts=settings.allowed_hosts)
    if proxies := proxy_list(settings.trusted_proxies):
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=proxies)
    # Outside all of the above, the server-error handler included.
    observe_every_request(app, access.note if access is not None else None)

    @app.get("/healthz", include_in_schema=False)
    def healthz(request: Request) -> JSONResponse:
        """200 once the service can reach its database; 503 while it cannot."""
        try:
            with request.app.state.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception:  # any database failure means "not ready"
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    def readyz(request: Request) -> JSONResponse:
        """200 while the database answers and its schema is this code's; 503 with the reason
        otherwise (migrations/readiness.py)."""
        reason = unready(request.app.state.engine)
        if reason is not None:
            return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        # Browsers ask for it whatever the page links (base.html links the SVG): no 404 each page.
        icon = STATIC_DIRECTORY / "favicon.ico"
        return FileResponse(icon, headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    def home() -> str:
        # Real clients fetch `/` before each token request (decisions.md): keep it plain.
        return (
            "<!doctype html><html lang=en><meta charset=utf-8><title>regdesk</title>"
            "<h1>regdesk</h1><p>Registration service. API documentation: "
            '<a href="/docs">/docs</a>.</p></html>'
        )

    return app


def _outbox_runner(settings: Settings, engine: Engine, webhooks: Sender, secret_key: str) -> Runner:
    """The delivery of this process's outbox: webhooks always, mail when there is a mail
    server to send it to (without one, mail waits in the outbox: accounts.md), opened with the
    instance's secret key (mail waits sealed: mail/service.py)."""
    channels = [webhooks.channel()]
    if settings.smtp_url is not None:
        channels.insert(0, mail_channel(settings.smtp_url, settings.mail_from, secret_key))
    return Runner(engine, channels, poll=settings.outbox_poll_seconds)


def _drop_unused_validation_responses(document: dict[str, Any]) -> None:
    """FastAPI documents a 422 for every route with parameters; ours answer 400 instead."""
    for operations in document.get("paths", {}).values():
        for described in operations.values():
            described.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


@cache
def _openapi() -> dict[str, Any]:
    """The API's document: the same for every app of this process (it describes the routes,
    not the configuration), so made once."""
    document = get_openapi(
        title=TITLE, version=__version__, description=DESCRIPTION, routes=_routes()
    )
    add_request_models(document)
    _drop_unused_validation_responses(document)
    return document
