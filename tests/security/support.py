"""What the security tests share: records of their own in a shared database, the routes of the
app as it is now (so that pages added later are attacked too), where a browser would really
go, and whether anything was written."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from sqlalchemy import Engine, select

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.models import metadata
from tests.client import TestClient
from tests.conftest import Apps
from tests.oauth.user_flow import REDIRECT, Flow
from tests.web.support import make_user

# How much of a cross product of attacks `make test` sends: a covering sample, the same every
# run (each test module says what it keeps), or, with REGDESK_HOSTILE_INPUT=full (`make fuzz`),
# every attack on every target.
MODE_ENV = "REGDESK_HOSTILE_INPUT"
MODE = os.environ.get(MODE_ENV) or "sample"
if MODE not in ("sample", "full"):
    raise pytest.UsageError(f"{MODE_ENV} is 'sample' (the default) or 'full', not {MODE!r}")

BASE_URL = "https://testserver"
_numbers = itertools.count(1)

__all__ = ["BASE_URL", "REDIRECT"]


def unique(prefix: str) -> str:
    return f"{prefix}{next(_numbers)}"


def new_user(engine: Engine, *, permissions: Collection[str] = ()) -> tuple[str, int]:
    """A user of this test's own (the database is shared by the module): username and id."""
    username = unique("user")
    return username, make_user(engine, username, permissions=list(permissions))


def new_flow(client: TestClient, apps: Apps, engine: Engine, obo: str = "pii:basic") -> Flow:
    """A user and an application of their own, ready for codes and exchanges (user_flow.py)."""
    _, user_id = new_user(engine)
    application = apps.register(
        obo_scopes=obo, service_scopes="user:read", redirect_uris=[REDIRECT]
    )
    return Flow(client, engine, application, user_id)


def other_browser(app: FastAPI) -> TestClient:
    """A second browser with cookies of its own, for the pages (the API lives on the module's
    `client`, whose event loop reads the database)."""
    return TestClient(app, base_url=BASE_URL)


# --- did anything change? ------------------------------------------------------------------


def snapshot(engine: Engine) -> dict[str, list[str]]:
    """Every row of every table, in a stable order (as tests/transfer/support.table_rows), but
    for when a sign-in session was last seen: a page view notes that, an attack changes it not.

    On PostgreSQL in one statement (each row as text): this suite takes hundreds of these, and
    a round trip per table would be most of its time."""
    tables = {
        table.name: [c.name for c in table.columns if (table.name, c.name) != _SEEN]
        for table in metadata.sorted_tables
    }
    rows: dict[str, list[str]] = {name: [] for name in tables}
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            selects = []
            for name, columns in tables.items():
                row = ", ".join(f'"{column}"' for column in columns)
                selects.append(f"SELECT '{name}', ROW({row})::text FROM \"{name}\"")
            for name, row in connection.exec_driver_sql(" UNION ALL ".join(selects)):
                rows[name].append(row)
        else:
            for table in metadata.sorted_tables:
                kept = [table.c[name] for name in tables[table.name]]
                rows[table.name] = [repr(tuple(r)) for r in connection.execute(select(*kept))]
    return {name: sorted(found) for name, found in rows.items()}


_SEEN = ("web_sessions", "last_seen_at")


def changed_tables(
    before: Mapping[str, list[str]], after: Mapping[str, list[str]], allowed: Collection[str] = ()
) -> list[str]:
    """The tables whose rows differ, less those `allowed` to (e.g. the failed-login record)."""
    return [name for name in before if before[name] != after[name] and name not in allowed]


# --- HTML pages ------------------------------------------------------------------------------

REFUSED_FORM = "This form could not be verified"  # the CSRF refusal (templates/forbidden.html)


def assert_page_headers(response: httpx.Response, *, no_store: bool = True) -> None:
    """decisions.md, Transport: never framed, no referrer, no sniffing; and not cached."""
    headers = response.headers
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["x-frame-options"] == "DENY"
    policy = [p.strip() for p in headers["content-security-policy"].split(";")]
    assert "frame-ancestors 'none'" in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    if no_store:
        assert "no-store" in headers.get("cache-control", ""), headers.get("cache-control")


# --- the routes of the app -------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    method: str
    path: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    def url(self, value: str = "1") -> str:
        """The path with every `{parameter}` filled in with `value`."""
        return re.sub(r"\{[^}]+\}", value, self.path)


# Not pages: the machine-readable answers and the API documentation FastAPI serves.
_NOT_PAGES = (
    "/api/",
    "/openapi.json",
    "/.well-known/",
    "/healthz",
    "/readyz",
    "/metrics",  # Prometheus's text, behind its own token
    "/static",
    "/favicon.ico",
    "/oauth/jwks",  # OpenID Connect's keys and claims: JSON, as the API's
    "/oauth/userinfo",
)
# The routes that sign the visitor out when merely visited (a GET, as the specifications make
# them: operator.md's /oauth/logout, OpenID Connect's end-session endpoint).
SIGN_OUT = ("/oauth/logout", "/oauth/end-session")


def routes() -> Iterator[Route]:
    """Every route of the application as `create_app` builds it today."""
    app = create_app(load_settings(database_url="sqlite://"))
    for context in iter_route_contexts(app.routes):
        for method in sorted(context.methods or ()):
            if method != "HEAD" and context.path:
                yield Route(method, context.path)


def page_routes(method: str) -> list[Route]:
    """The routes answering HTML (everything outside /api/ and the machine-readable paths)."""
    return [r for r in routes() if r.method == method and not r.path.startswith(_NOT_PAGES)]


# --- where a browser goes ----------------------------------------------------------------


def browser_target(base: str, location: str) -> tuple[str, str]:
    """(scheme, host) of where a browser at `base` goes for `Location: location`.

    As the WHATWG URL parser does before resolving: leading and trailing spaces and control
    characters are stripped, tabs and line breaks anywhere are dropped, and a backslash counts
    as a slash in http(s) addresses.
    """
    cleaned = location.strip("".join(map(chr, range(0x21))))
    cleaned = re.sub(r"[\t\n\r]", "", cleaned).replace("\\", "/")
    resolved = urlsplit(urljoin(base, cleaned))
    return resolved.scheme.lower(), (resolved.hostname or "").lower()


def stays_within(response: httpx.Response, base: str, *allowed: str) -> bool:
    """Whether the answer sends the browser nowhere, or only to `base` or one of `allowed`
    (origins as `https://host`)."""
    location = response.headers.get("location")
    if location is None:
        return True
    scheme, host = browser_target(base, location)
    return f"{scheme}://{host}" in {_origin(base), *map(_origin, allowed)}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}"
