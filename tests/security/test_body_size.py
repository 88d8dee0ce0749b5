"""Request bodies are held to their route's limit before anything reads them (decisions.md,
Transport; ASVS V12.1.1, V13.1; CWE-400, CWE-770).

Every route refuses a body that declares more than its limit, without reading a byte of it;
a streamed body (no `Content-Length`) is refused once it passes the limit, for a visitor whom
the route would otherwise serve. The 413 is in the shape of the route's family: RFC 6749 5.2
at the OAuth endpoints, the API's envelope under /api/, a page (with every page's headers)
elsewhere. Nothing is written, and no error is logged. Controls: a body at the limit still
works, and so does the largest volunteer form. The import upload is allowed its 10 MB only
once its sender is known to be an administrator.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from regdesk.admin.transfer import FORM_OVERHEAD, MAX_UPLOAD
from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.users.models import User
from regdesk.volunteers.options import OptionSpec, create_option
from tests.admin.support import Person, department, person
from tests.client import TestClient
from tests.conftest import Apps, bearer
from tests.security.support import (
    Route,
    assert_page_headers,
    changed_tables,
    routes,
    snapshot,
    unique,
)
from tests.web.support import PASSWORD, form, make_user

KIB = 1024
MB = 1024 * KIB
OAUTH_PATHS = ("/api/oauth/token", "/api/oauth/revoke", "/api/oauth/introspect")
LIMITS = {"oauth": 16 * KIB, "api": 64 * KIB, "page": 64 * KIB}
CONTENT_TYPES = {
    "oauth": "application/x-www-form-urlencoded",
    "api": "application/json",
    "page": "application/x-www-form-urlencoded",
}
EVERY_ROUTE = list(routes())
PAGE_FORMS = [r for r in EVERY_ROUTE if r.method == "POST" and not r.path.startswith("/api/")]
IMPORT = "/admin/transfer/import"


def family(path: str) -> str:
    if path in OAUTH_PATHS:
        return "oauth"
    return "api" if path.startswith("/api/") else "page"


def assert_refused(response: httpx.Response, path: str) -> None:
    """413 in the shape of the route's family, and the connection closed after it."""
    assert response.status_code == 413, (response.status_code, response.text[:300])
    assert response.headers["connection"] == "close"
    kind = family(path)
    size = f"{LIMITS[kind] // KIB} KiB"
    if kind == "oauth":
        assert response.json() == {
            "error": "invalid_request",
            "error_description": f"The request body is too large: at most {size}.",
        }
        assert response.headers["cache-control"] == "no-store"
    elif kind == "api":
        message = f"The request body is too large: at most {size}."
        assert response.json() == {"errors": {"request": {"message": message}}}
    else:
        assert_page_headers(response)
        assert "<h1>Form too large</h1>" in response.text
        assert f"({size})" in response.text


@pytest.fixture
def quiet(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """No error, and no traceback, is logged for a refused body: it is no server error."""
    with caplog.at_level(logging.INFO):
        yield
    loud = [r for r in caplog.get_records("call") if r.levelno >= logging.ERROR or r.exc_info]
    assert loud == [], [r.getMessage() for r in loud]


@pytest.fixture(scope="module")
def admin(app: FastAPI, engine: Engine, client: TestClient) -> Person:
    """An administrator signed in with a browser of their own (`client` runs the lifespan)."""
    return person(app, engine, unique("admin"), permissions=["admin"])


# --- over the limit --------------------------------------------------------------------------


@pytest.mark.parametrize("route", EVERY_ROUTE, ids=str)
def test_a_body_declared_over_its_limit_is_refused_before_it_is_read(
    client: TestClient, engine: Engine, route: Route, quiet: None
) -> None:
    kind = family(route.path)
    read: list[int] = []

    def body() -> Iterator[bytes]:
        read.append(1)
        yield b"x" * (LIMITS[kind] + 1)

    before = snapshot(engine)
    response = client.request(
        route.method,
        route.url(),
        content=body(),
        headers={
            "Content-Type": CONTENT_TYPES[kind],
            "Content-Length": str(LIMITS[kind] + 1),
        },
        follow_redirects=False,
    )
    assert_refused(response, route.path)
    assert read == [], "the body was read"
    assert changed_tables(before, snapshot(engine)) == []


def test_a_body_declared_a_gigabyte_long_is_refused_at_once(client: TestClient) -> None:
    """The declared size alone decides: nothing of the gigabyte need arrive."""
    response = client.post(
        "/login",
        content=iter([b"username=x"]),
        headers={"Content-Type": CONTENT_TYPES["page"], "Content-Length": str(2**30)},
    )
    assert_refused(response, "/login")


def streamed(size: int) -> Iterator[bytes]:
    """A body without a `Content-Length` (sent chunked), `size` bytes of form text."""
    for start in range(0, size, KIB):
        yield b"a" * min(KIB, size - start)


def test_a_streamed_body_past_the_limit_is_refused_at_the_oauth_endpoints(
    client: TestClient, engine: Engine, quiet: None
) -> None:
    before = snapshot(engine)
    for path in OAUTH_PATHS:
        response = client.post(
            path,
            content=streamed(LIMITS["oauth"] + 1),
            headers={"Content-Type": CONTENT_TYPES["oauth"]},
        )
        assert_refused(response, path)
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize(
    ("path", "scope"),
    [("/api/v0/users/search", "user:read"), ("/api/v0/volunteers/search", "volunteer:read")],
)
def test_a_streamed_body_past_the_limit_is_refused_by_the_api(
    client: TestClient, engine: Engine, apps: Apps, path: str, scope: str, quiet: None
) -> None:
    """With a live token, so that the route would read the body: past the limit, it stops."""
    token = apps.service_token(scope)
    before = snapshot(engine)
    response = client.post(
        path,
        content=streamed(LIMITS["api"] + 1),
        headers={"Content-Type": "application/json", **bearer(token)},
    )
    assert_refused(response, path)
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("route", PAGE_FORMS, ids=str)
def test_a_streamed_form_past_the_limit_is_refused(
    admin: Person, engine: Engine, route: Route, quiet: None
) -> None:
    """As a signed-in administrator, whom every form serves (the import's raised limit needs a
    declared size: see below)."""
    before = snapshot(engine)
    response = admin.client.post(
        route.url(),
        content=streamed(LIMITS["page"] + 1),
        headers={"Content-Type": CONTENT_TYPES["page"]},
        follow_redirects=False,
    )
    if route.path == IMPORT:
        assert response.headers["location"] == "/admin/transfer?too_large"
    else:
        assert_refused(response, route.path)
    assert changed_tables(before, snapshot(engine)) == []


@pytest.mark.parametrize("path", ["/login", "/oauth/authorize", "/volunteer", IMPORT])
def test_a_streamed_form_past_the_limit_is_refused_for_a_signed_out_visitor(
    client: TestClient, engine: Engine, path: str, quiet: None
) -> None:
    before = snapshot(engine)
    response = client.post(
        path,
        content=streamed(LIMITS["page"] + 1),
        headers={"Content-Type": CONTENT_TYPES["page"]},
        follow_redirects=False,
    )
    assert_refused(response, path)
    assert changed_tables(before, snapshot(engine)) == []


# --- at the limit: still served ----------------------------------------------------------------


def padded(fields: dict[str, str], size: int) -> bytes:
    """`fields` form-encoded, with a field the route ignores making it exactly `size` bytes."""
    body = str(httpx.QueryParams(fields)).encode() + b"&padding="
    assert len(body) < size
    return body + b"x" * (size - len(body))


def test_a_token_request_at_the_limit_is_answered(client: TestClient, apps: Apps) -> None:
    registered = apps.register(service_scopes="user:read")
    body = padded({"grant_type": "client_credentials"}, LIMITS["oauth"])
    response = client.post(
        "/api/oauth/token",
        content=body,
        headers={"Content-Type": CONTENT_TYPES["oauth"]},
        auth=(registered.client_id, registered.client_secret),
    )
    assert response.status_code == 200, response.text
    assert response.json()["token_type"] == "bearer"


def test_a_login_at_the_limit_signs_in(client: TestClient, engine: Engine) -> None:
    username = unique("user")
    make_user(engine, username)
    fields = {
        **form(client.get("/login").text, "/login").fields,
        "username": username,
        "password": PASSWORD,
    }
    response = client.post(
        "/login",
        content=padded(fields, LIMITS["page"]),
        headers={"Content-Type": CONTENT_TYPES["page"]},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text[:300]
    assert response.headers["location"] == "/account"


def test_an_api_search_at_the_limit_is_answered(client: TestClient, apps: Apps) -> None:
    token = apps.service_token("user:read")
    document = json.dumps({"limit": 1}).encode()
    body = document + b" " * (LIMITS["api"] - len(document))
    response = client.post(
        "/api/v0/users/search",
        content=body,
        headers={"Content-Type": "application/json", **bearer(token)},
    )
    assert response.status_code == 200, response.text
    assert len(response.json()["data"]) <= 1


def test_the_largest_volunteer_form_fits_the_page_limit(
    app: FastAPI, engine: Engine, client: TestClient
) -> None:
    """Every contact row full, thirty departments, ten answers of 1,000 characters and fifty
    choices of 100 ticked: about 25 KB as a browser encodes it, so the page limit leaves room."""
    sentence = "I ran the registration desk for three years, and can lift 20 kg; ask me! "
    departments = [department(engine, unique("Department")) for _ in range(30)]
    with write_session(engine) as session:
        questions = [
            create_option(session, Actor("test"), OptionSpec(unique("Question"), "text")).id
            for _ in range(10)
        ]
        choices = [(f"{n} " + sentence * 2)[:100] for n in range(50)]
        skills = OptionSpec(unique("Skills"), "multi", "\n".join(choices))
        ticked = create_option(session, Actor("test"), skills).id
    attendee = person(app, engine, unique("attendee"))
    fields: dict[str, Any] = {"csrf_token": attendee.csrf_token(), "contact-0-primary": "yes"}
    for index in range(10):
        fields[f"contact-{index}-name"] = f"{index} {sentence}"[:100]
        fields[f"contact-{index}-value"] = (f"{index} " + sentence * 7)[:500]
    for department_id in departments:
        fields[f"department-{department_id}"] = ["interest", "experience"]
    for option_id in questions:
        fields[f"option-{option_id}"] = (sentence * 14)[:1000]
    fields[f"option-{ticked}"] = choices
    body = str(httpx.QueryParams(fields)).encode()
    assert 20_000 < len(body) < LIMITS["page"], len(body)
    response = attendee.client.post(
        "/volunteer",
        content=body,
        headers={"Content-Type": CONTENT_TYPES["page"]},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text[:300]
    assert response.headers["location"] == "/volunteer?saved"


# --- the import upload: 10 MB for an administrator only --------------------------------------


def import_document(username: str, size: int) -> bytes:
    """A document importing one user, padded with white space to `size` bytes."""
    user = {
        "username": username,
        "email": f"{username}@example.org",
        "firstName": "Fae",
        "lastName": "Fox",
    }
    document = json.dumps({"users": [user]}).encode()
    return document + b" " * (size - len(document))


def upload(browser: TestClient, content: bytes, csrf_token: str | None) -> httpx.Response:
    """The import form as a browser sends it: multipart, its size declared."""
    return browser.post(
        IMPORT,
        data={"csrf_token": csrf_token} if csrf_token else {},
        files={"document": ("convention.json", content, "application/json")},
        follow_redirects=False,
    )


@pytest.mark.parametrize("who", ["signed out", "attendee", "department lead"])
def test_only_an_administrator_may_send_the_import_its_10_mb(
    app: FastAPI, client: TestClient, engine: Engine, who: str, quiet: None
) -> None:
    browser, token = client, None
    if who != "signed out":
        sender = person(app, engine, unique("user"))
        if who == "department lead":
            department(engine, unique("Department"), sender.username)
        browser, token = sender.client, sender.csrf_token()
    before = snapshot(engine)
    response = upload(browser, import_document(unique("imported"), MB), token)
    assert_refused(response, IMPORT)
    assert changed_tables(before, snapshot(engine)) == []


def test_an_administrator_imports_a_document_of_nearly_10_mb(
    admin: Person, engine: Engine, quiet: None
) -> None:
    username = unique("imported")
    response = upload(
        admin.client, import_document(username, MAX_UPLOAD - 64 * KIB), admin.csrf_token()
    )
    assert response.status_code == 303, response.text[:300]
    assert re.fullmatch(r"/admin/transfer\?imported=\d+", response.headers["location"])
    with Session(engine) as session:
        assert session.scalar(select(User.id).where(User.username == username)) is not None


def test_an_administrator_s_upload_over_the_limit_gets_the_page_s_explanation(
    admin: Person, engine: Engine, quiet: None
) -> None:
    """Declared over 10 MB and the form's overhead: not read, and the page says why (as for a
    file just over 10 MB, tests/admin/test_transfer.py)."""
    before = snapshot(engine)
    size = MAX_UPLOAD + FORM_OVERHEAD + 1
    response = upload(admin.client, import_document(unique("imported"), size), admin.csrf_token())
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/transfer?too_large"
    assert changed_tables(before, snapshot(engine)) == []
