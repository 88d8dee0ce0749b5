"""Hostile input in every field (ASVS 4.0 V5.3.4: parameterised queries; V5.1.3 and V5.1.4:
input validated and strongly typed; V5.3.3: output escaped; V7.4.1: no error details;
decisions.md, Errors: "No error response ever carries a stack trace, SQL, or another user's
data").

The fields of the API are read from its own OpenAPI document: every path and query parameter
and every member of every request body (search filters included), so a field added later is
attacked too; then the authorization request's parameters and the login form's fields. Each
payload goes into one field of an otherwise sensible request, and the answer is a clean 4xx in
the endpoint's error shape (or a 200 that matches nothing), never a 5xx, and the database is
exactly as before.

`make test` sends a sample of the fields x payloads product (`sample`: every field meets a
payload of every class, every payload reaches every kind of field); `make fuzz`
(REGDESK_HOSTILE_INPUT=full) sends every payload to every field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlencode

import httpx
import pytest
from markupsafe import escape
from sqlalchemy import Engine

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.permissions import permissions_of
from regdesk.oauth.scopes import SCOPES, Holder
from regdesk.users.service import set_permissions
from tests.api.support import app_engine, import_rich, statements
from tests.client import TestClient
from tests.conftest import Apps, Registered, bearer
from tests.security.support import MODE, REDIRECT, changed_tables, new_user, snapshot
from tests.web.support import CALLBACK, PASSWORD, authorize_params, form, log_in, register_app


@dataclass(frozen=True)
class Payload:
    """One hostile value: as JSON text (put where a JSON value goes) and as percent-encoded
    text (put where a URL or form value goes)."""

    json: bytes
    text: str


def value(python: Any) -> Payload:
    return Payload(json.dumps(python).encode(), quote(str(python), safe=""))


def without_echo(text: str, payload: Payload) -> str:
    """The answer less what it may rightly echo of the payload (a login form shows what was
    typed), so that what is left can be searched for internals."""
    typed = unquote(payload.text, errors="replace")
    return text.replace(str(escape(typed)), "").replace(typed, "")


DEEP = 10_000
# The payloads by what they attack. Under `make test` each field meets one payload of every
# class (see `sample`); REGDESK_HOSTILE_INPUT=full (`make fuzz`) sends every one to every field.
CLASSES: dict[str, dict[str, Payload]] = {
    "sql": {
        "sql quote": value("' OR '1'='1"),
        "sql comment": value("1; DROP TABLE users; --"),
        "sql union": value(
            "1 UNION SELECT password_hash, secret_hash FROM users, oauth_applications--"
        ),
        "sql stacked": value("1'); DELETE FROM users; SELECT pg_sleep(0); --"),
        "sql wildcard %": value("%"),
        "sql wildcard _": value("_"),
    },
    "control characters": {
        "NUL inside": value("a\x00b"),
        "NUL alone": value("\x00"),
        "CRLF header injection": value("a\r\nSet-Cookie: regdesk_session=x"),
    },
    "encoding": {
        "lone surrogate": Payload(b'"\\ud800x"', "%ED%A0%80x"),  # CESU-8 in a URL: not UTF-8
        "invalid UTF-8": Payload(b'"\xff\xfe"', "%FF%FE"),
        "overlong UTF-8 slash": Payload(b'"\xc0\xaf"', "%C0%AF"),
        "right-to-left override": value("\u202eabc"),
    },
    "numbers": {
        "huge number": Payload(b"1" + b"0" * 30, "1" + "0" * 30),
        "number of 5000 digits": Payload(b"9" * 5000, "9" * 5000),
        "negative": value(-1),
        "float overflow": Payload(b"1.5e999", "1.5e999"),
        "NaN": Payload(b"NaN", "NaN"),
    },
    "type confusion": {
        "true": Payload(b"true", "true"),
        "array": Payload(b'["1", "2"]', quote('["1", "2"]')),
        "operator object": Payload(b'{"$ne": null}', quote('{"$ne": null}')),
    },
    "size": {
        # In a URL, as long as the client sends one (uvicorn refuses longer request lines itself).
        "1 MB string": Payload(b'"' + b"A" * 1_000_000 + b'"', "A" * 60_000),
        "deeply nested": Payload(b"[" * DEEP + b"]" * DEEP, "%5B" * DEEP + "%5D" * DEEP),
    },
    "format string": {"format string": value("%s%s%n{0}{__class__}")},
    "path traversal": {"path traversal": value("../../../etc/passwd")},
    "markup": {
        "script": value("<script>alert(1)</script>"),
        "attribute breakout": value('"><svg onload=alert(1)>'),
    },
}
PAYLOADS: dict[str, Payload] = {n: p for members in CLASSES.values() for n, p in members.items()}
CLASS_OF = {name: kind for kind, members in CLASSES.items() for name in members}

# What no answer may show of what went wrong inside.
INTERNALS = re.compile(
    r"Traceback|File \"|sqlalchemy|psycopg|sqlite3|SELECT |INSERT |UPDATE |DELETE FROM|"
    r"Exception|Error:",
)


# --- the fields ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """A place a value goes: `where` is path, query, json or form; `name` is dotted for a
    member of a member (`filter.email`). `as_user` names the scopes of a user's token to send
    it with, for a route that also opens to one (registrations.md: con:read, about oneself);
    else the service token holding every scope a service may hold is sent."""

    method: str
    path: str
    where: str
    name: str
    as_user: str | None = None

    def __str__(self) -> str:
        token = f" as user's {self.as_user}" if self.as_user else ""
        return f"{self.method} {self.path} {self.where}:{self.name}{token}"


def _api_document() -> dict[str, Any]:
    from regdesk.app import create_app
    from regdesk.config import load_settings

    document: dict[str, Any] = create_app(load_settings(database_url="sqlite://")).openapi()
    return document


def _members(schema: dict[str, Any], schemas: dict[str, Any], prefix: str) -> Iterator[str]:
    for name, member in schema.get("properties", {}).items():
        refs = [member.get("$ref")] + [a.get("$ref") for a in member.get("anyOf", [])]
        nested = [r for r in refs if r]
        if nested:
            inner = schemas[nested[0].rsplit("/", 1)[1]]
            yield from _members(inner, schemas, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def api_fields() -> list[Field]:
    document = _api_document()
    schemas = document["components"]["schemas"]
    found: list[Field] = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            # A requirement a service may meet is sent the service token; one only users grant
            # (con:read about oneself, a ticket scanner's) a user's token of those scopes.
            tokens = [
                None if all(SCOPES[s].holder & Holder.SERVICE for s in scopes) else " ".join(scopes)
                for requirement in operation.get("security", [{}])
                for scopes in requirement.values() or [[]]
            ]
            for parameter in operation.get("parameters", []):
                found += [
                    Field(method.upper(), path, parameter["in"], parameter["name"], token)
                    for token in tokens
                ]
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                schema = content["schema"]
                if "$ref" in schema:
                    schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
                where = "json" if media == "application/json" else "form"
                found += [
                    Field(method.upper(), path, where, n) for n in _members(schema, schemas, "")
                ]
    return found


# The token endpoints also read a JSON object (decisions.md: some clients send one).
API_FIELDS = api_fields()
API_FIELDS += [Field(f.method, f.path, "json", f.name) for f in API_FIELDS if f.where == "form"]
AUTHORIZE_FIELDS = [
    Field("GET", "/oauth/authorize", "query", name)
    for name in (
        "client_id",
        "response_type",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
    )
]
LOGIN_FIELDS = [Field("POST", "/login", "form", name) for name in ("username", "password", "next")]


# --- which payload goes into which field ------------------------------------------------------


Case = tuple[Field, str]  # a field and the name of the payload that goes into it


def sample(fields: list[Field]) -> list[Case]:
    """A covering sample, the same every run: the fields are taken by where their value goes
    (path, query, JSON, form: each payload has a JSON and a text form, and each place its own
    parser), and within each such group, for each class of payloads, field i gets the class's
    payload i (round-robin), and a class with more payloads than the group has fields gives its
    extra payloads to the first fields again. So every field meets every class, and every
    payload reaches every group."""
    cases: list[Case] = []
    for where in dict.fromkeys(f.where for f in fields):
        group = [f for f in fields if f.where == where]
        for members in CLASSES.values():
            names = list(members)
            width = max(len(group), len(names))
            cases += [(group[i % len(group)], names[i % len(names)]) for i in range(width)]
    return sorted(cases, key=lambda case: (fields.index(case[0]), list(PAYLOADS).index(case[1])))


def product(fields: list[Field]) -> list[Case]:
    return [(f, name) for f in fields for name in PAYLOADS]


_chosen = product if MODE == "full" else sample
CASES = {  # what each test below attacks: its fields, and the cases made of them
    "api": (API_FIELDS, _chosen(API_FIELDS)),
    "authorize": (AUTHORIZE_FIELDS, _chosen(AUTHORIZE_FIELDS)),
    "login": (LOGIN_FIELDS, _chosen(LOGIN_FIELDS)),
}


def attacks(surface: str) -> list[Any]:
    """The parameters of one surface's test, named `<field>-<payload>` as the full product
    would name them, so that a failure in the sample replays alone under either mode."""
    return [
        pytest.param(target, PAYLOADS[name], id=f"{target}-{name}")
        for target, name in CASES[surface][1]
    ]


@pytest.mark.parametrize("surface", list(CASES))
def test_the_sample_meets_every_field_with_every_class_and_sends_every_payload(
    surface: str,
) -> None:
    """What `make test` gives up of the full product, and what it keeps. Computed from the
    very cases the tests below are parametrised with."""
    fields, cases = CASES[surface]
    assert len(PAYLOADS) == sum(len(m) for m in CLASSES.values()), "a payload name twice"
    assert [f for f in fields if f not in {target for target, _ in cases}] == []
    assert set(PAYLOADS) - {name for _, name in cases} == set()
    for where in {f.where for f in fields}:
        sent = {name for target, name in cases if target.where == where}
        assert set(PAYLOADS) - sent == set(), f"never sent to a {where} field"
    for target in fields:
        met = {CLASS_OF[name] for t, name in cases if t == target}
        assert set(CLASSES) - met == set(), f"{target} never meets these"
    assert len(set(cases)) == len(cases), "a case twice"
    if MODE == "full":
        assert cases == product(fields)


def test_the_api_fields_were_found() -> None:
    """The walk of the OpenAPI document is not vacuous: it finds what we know is there."""
    names = {str(f) for f in API_FIELDS}
    for expected in (
        "POST /api/v0/users/search json:filter.email",
        "POST /api/v0/users/search json:filter.roleId",
        "POST /api/v0/volunteers/search json:nextPage",
        "GET /api/v0/users/{id} path:id",
        "POST /api/v0/registration/search json:filter.userIds",
        "POST /api/v0/registration/search json:filter.status",
        "POST /api/v0/registration/search json:filter.productIds",
        "POST /api/v0/registration/search json:nextPage",
        "GET /api/v0/users/{id}/registration path:id",
        "GET /api/v0/users/{id}/registration path:id as user's con:read",
        "PUT /api/v0/users/{id}/roles/{roleId} path:roleId",
        "PUT /api/v0/users/{id}/roles/{roleId} json:scope",
        "GET /api/v0/roles query:nextPage",
        "POST /api/oauth/token form:refresh_token",
        "POST /api/oauth/introspect form:token_type_hint",
    ):
        assert expected in names, sorted(names)


# --- the world the attacks happen in --------------------------------------------------------


# Every scope a service may hold (the scope registry's): every service route is reached.
SERVICE_SCOPES = " ".join(n for n, s in SCOPES.items() if s.holder & Holder.SERVICE)


@dataclass
class World:
    token: str
    users_tokens: dict[str, str]  # a user's token by its scopes (Field.as_user)
    application: Registered  # a client that may use every grant
    session_cookie: str
    before: dict[str, list[str]] = field(default_factory=dict)  # the database before any attack


@pytest.fixture(scope="module")
def world(client: TestClient, engine: Engine) -> World:
    import_rich(engine)  # users, roles, departments and volunteers with id 1, 2...
    apps = Apps(engine, client)
    sensitive = {
        s for f in API_FIELDS if f.as_user for s in f.as_user.split() if SCOPES[s].sensitive
    }
    with write_session(engine) as session:  # only users holding a sensitive scope grant it
        held = permissions_of(session, 1)
        set_permissions(session, Actor("test"), 1, {*held, *sensitive})
    users_tokens = {  # of user 1, the id every other path parameter gets
        scopes: apps.mint(apps.register(obo_scopes=scopes), scopes, user_id=1)
        for scopes in {f.as_user for f in API_FIELDS if f.as_user}
    }
    application = apps.register(
        service_scopes="user:read", obo_scopes="pii:basic", redirect_uris=[REDIRECT]
    )
    register_app(engine, redirect_uris=[CALLBACK])
    username, _ = new_user(engine)
    log_in(client, username)
    cookie = client.cookies.get("regdesk_session")
    assert cookie
    token = apps.service_token(SERVICE_SCOPES)
    return World(token, users_tokens, application, cookie, snapshot(engine))


# The grant each token-endpoint field belongs to, so that the value reaches the code that
# reads it (an unknown code, a real client).
GRANT_OF = {
    "code": "authorization_code",
    "redirect_uri": "authorization_code",
    "code_verifier": "authorization_code",
    "refresh_token": "refresh_token",
}


def _form_base(target: Field, world: World) -> dict[str, str]:
    credentials = {
        "client_id": world.application.client_id,
        "client_secret": world.application.client_secret,
    }
    if target.path != "/api/oauth/token":
        return {"token": "not-a-token", **credentials}
    grant = GRANT_OF.get(target.name, "client_credentials")
    base = {"grant_type": grant, **credentials}
    if grant == "authorization_code":
        base.update(code="not-a-code", redirect_uri=REDIRECT)
    if grant == "refresh_token":
        base["refresh_token"] = "not-a-refresh-token"
    return base


def _encoded(fields: dict[str, str], target: Field, payload: Payload) -> str:
    pairs = [f"{quote_plus(k)}={quote_plus(v)}" for k, v in fields.items() if k != target.name]
    return "&".join([*pairs, f"{quote_plus(target.name)}={payload.text}"])


def _json_body(target: Field, payload: Payload, base: dict[str, str]) -> bytes:
    marker = "@@payload@@"
    document: dict[str, Any] = {k: v for k, v in base.items() if k != target.name}
    inner = document
    *parents, last = target.name.split(".")
    for parent in parents:
        inner = inner.setdefault(parent, {})
    inner[last] = marker
    return json.dumps(document).encode().replace(f'"{marker}"'.encode(), payload.json)


def send(client: TestClient, target: Field, payload: Payload, world: World) -> httpx.Response:
    path = re.sub(r"\{[^}]+\}", "1", target.path)
    if target.where == "path":
        path = target.path.replace("{" + target.name + "}", payload.text)
        path = re.sub(r"\{[^}]+\}", "1", path)
    token = world.users_tokens[target.as_user] if target.as_user else world.token
    headers = bearer(token) if not target.path.startswith("/api/oauth/") else {}
    content = b""
    if target.where == "query":
        path = f"{path}?{target.name}={payload.text}"
    elif target.where == "json":
        headers["Content-Type"] = "application/json"
        base = _form_base(target, world) if target.path.startswith("/api/oauth/") else {}
        content = _json_body(target, payload, base)
    elif target.where == "form":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        content = _encoded(_form_base(target, world), target, payload).encode()
    response: httpx.Response = client.request(
        target.method, path, content=content or None, headers=headers
    )
    return response


# --- what a clean refusal looks like ------------------------------------------------------


def assert_clean_api_answer(response: httpx.Response, target: Field, payload: Payload) -> None:
    assert response.status_code < 500, response.text[:500]
    assert not INTERNALS.search(without_echo(response.text, payload)), response.text[:500]
    body = response.json()
    if target.path.startswith("/api/oauth/"):
        if response.status_code == 200:  # revocation of, or introspection about, no token
            assert body in ({}, {"active": False}), body
            return
        assert 400 <= response.status_code < 500
        assert set(body) == {"error", "error_description"}, body
        assert body["error_description"], body
        assert response.headers["cache-control"] == "no-store"
        return
    if response.status_code == 200:  # a search that matched nothing
        assert body.get("data") == [], body
        return
    assert 400 <= response.status_code < 500
    assert list(body) == ["errors"], body
    [(_, detail)] = body["errors"].items()
    assert isinstance(detail["message"], str)
    assert detail["message"]


@pytest.mark.parametrize(("target", "payload"), attacks("api"))
def test_the_api_refuses_hostile_input_cleanly(
    client: TestClient, world: World, target: Field, payload: Payload
) -> None:
    with writes(client) as written:
        response = send(client, target, payload, world)
    assert_clean_api_answer(response, target, payload)
    assert written == []
    if target.as_user is not None and "{id}" in target.path:
        # About oneself (con:read): no payload names the token's own user, so refused.
        unrouted = {"errors": {"resource": {"message": "Not found."}}}  # a payload holding "/"
        assert response.status_code == 403 or response.json() == unrouted, response.text[:500]
    elif not target.path.startswith("/api/oauth/"):
        # The payload reached the code that reads the field, not the guard's refusal.
        assert response.status_code not in (401, 403), response.text[:500]


# --- the pages ---------------------------------------------------------------------------


WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|TRUNCATE)\b", re.I)


@contextmanager
def writes(client: TestClient) -> Iterator[list[str]]:
    """The writing statements the app sends while the block runs (through SQLAlchemy, and on
    the event loop's own connections: tests/api/support.statements)."""
    found: list[str] = []
    with statements(app_engine(client)) as sent:
        yield found
    found += [str(s[0]) for s in sent if WRITE.match(str(s[0]))]


def assert_escaped(page: str, payload: Payload) -> None:
    """V5.3.3: what was typed comes back as text, never as markup."""
    for raw in ("<script>alert(1)</script>", '"><svg onload=alert(1)>'):
        assert raw not in page


@pytest.mark.parametrize(("target", "payload"), attacks("authorize"))
def test_the_authorization_request_refuses_hostile_input_cleanly(
    client: TestClient, engine: Engine, world: World, target: Field, payload: Payload
) -> None:
    """Signed in, so that a request good enough reaches the consent screen and shows it."""
    client.cookies.set("regdesk_session", world.session_cookie, domain="testserver.local")
    base = {k: v for k, v in authorize_params(Registered("2", "")).items() if k != target.name}
    query = "&".join([urlencode(base), f"{target.name}={payload.text}"])
    with writes(client) as written:
        response = client.get(f"/oauth/authorize?{query}", follow_redirects=False)
    assert response.status_code in (200, 302, 303, 400), response.text[:500]
    assert not INTERNALS.search(without_echo(response.text, payload)), response.text[:500]
    if response.status_code == 302:  # an error for the application, at its registered address
        location = response.headers["location"]
        assert location.startswith(CALLBACK + "?error="), location
        assert not re.search(r"[\x00-\x20]", location), location
    assert_escaped(response.text, payload)
    assert written == []


def test_all_those_attacks_wrote_nothing(engine: Engine, world: World) -> None:
    """Each case above watched the statements its request sent; this compares every row of
    every table with the rows before the first attack (a write no statement showed, say an
    injected one, would show here)."""
    assert changed_tables(world.before, snapshot(engine)) == []


@pytest.mark.parametrize(("target", "payload"), attacks("login"))
def test_the_login_form_refuses_hostile_input_cleanly(
    client: TestClient, engine: Engine, world: World, target: Field, payload: Payload
) -> None:
    """A failed login is recorded (the audit log, the throttle): nothing else is written."""
    page = client.get("/login")
    username, _ = new_user(engine)
    before = snapshot(engine)
    fields = {**form(page.text, "/login").fields, "username": username, "password": PASSWORD}
    if target.name != "next":
        fields["password"] = "wrong"
    response = client.post(
        "/login",
        content=_encoded(fields, target, payload).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert response.status_code in (200, 303, 400, 403, 413, 429), response.text[:500]
    assert not INTERNALS.search(without_echo(response.text, payload)), response.text[:500]
    if response.status_code == 303:
        assert response.headers["location"] == "/account"
    assert_escaped(response.text, payload)
    allowed = ("audit_events", "login_failures", "web_sessions")
    assert changed_tables(before, snapshot(engine), allowed) == []
