"""The token endpoint with client_credentials (api.md 4.2, 5.2; decisions.md, Scopes, Tokens,
Errors, Cookies and CSRF), driven the way the real clients listed in decisions.md drive it."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import time
from typing import Any
from urllib.parse import quote, quote_plus, urlencode

from fastapi import FastAPI
from sqlalchemy import Engine, select, update
from starlette.types import Message

from regdesk.app import create_app
from regdesk.audit.service import Actor
from regdesk.config import load_settings
from regdesk.db import read_session, utcnow, write_session
from regdesk.oauth.applications import rotate_secret, set_suspended
from regdesk.oauth.models import AccessToken, Application
from regdesk.oauth.quick_grant import KnownClients
from regdesk.oauth.tokens import token_key
from tests.client import TestClient
from tests.conftest import Registered, bearer
from tests.helpers import database_text
from tests.oauth.support import (
    AWKWARD_SECRET,
    TOKEN_URL,
    assert_oauth_error,
    basic,
    register,
)

FORM = {"content-type": "application/x-www-form-urlencoded"}
TIME_CLOCK_SCOPES = "user:read volunteer:read registration:read"


def form_credentials(app: Registered, **fields: str | list[str]) -> dict[str, str | list[str]]:
    return {
        "grant_type": "client_credentials",
        "client_id": app.client_id,
        "client_secret": app.client_secret,
        **fields,
    }


def reads_users(client: TestClient, token: str) -> bool:
    response = client.post("/api/v0/users/search", json={}, headers=bearer(token))
    assert response.status_code in (200, 401, 403), response.text
    return response.status_code == 200


def reads_volunteers(client: TestClient, token: str) -> bool:
    response = client.post("/api/v0/volunteers/search", json={}, headers=bearer(token))
    assert response.status_code in (200, 401, 403), response.text
    return response.status_code == 200


def granted_scopes(response_scope: str) -> list[str]:
    names = response_scope.split(" ")
    assert all(names), f"not single-space separated: {response_scope!r}"
    return names


# --- client authentication -----------------------------------------------------------------


def test_php_style_form_credentials_get_a_bearer_token(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes=TIME_CLOCK_SCOPES)
    # Laravel's asForm(): http_build_query, spaces as '+', ':' as %3A.
    body = urlencode(form_credentials(app, scope=TIME_CLOCK_SCOPES), quote_via=quote_plus)
    response = client.post(TOKEN_URL, content=body, headers=FORM)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    document = response.json()
    assert set(document) == {"access_token", "token_type", "expires_in", "scope"}  # no refresh
    assert re.fullmatch(r"[A-Za-z0-9_-]{54}", document["access_token"])
    assert document["token_type"] == "bearer"
    assert document["expires_in"] == 3600
    assert granted_scopes(document["scope"]) == TIME_CLOCK_SCOPES.split()
    assert reads_users(client, document["access_token"])
    assert reads_volunteers(client, document["access_token"])


def test_ruby_style_basic_credentials_get_a_bearer_token(
    client: TestClient, engine: Engine
) -> None:
    app = register(engine, service_scopes="user:read")
    # The oauth2 gem: Basic over the raw id and secret, and only grant_type in the body.
    response = client.post(
        TOKEN_URL,
        content="grant_type=client_credentials",
        headers={**FORM, **basic(app.client_id, app.client_secret)},
    )
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "user:read"
    assert reads_users(client, response.json()["access_token"])


def test_basic_credentials_may_be_url_encoded_or_raw(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read", client_secret=AWKWARD_SECRET)
    encodings = {
        "raw (requests, Authlib's client, the oauth2 gem)": (app.client_id, AWKWARD_SECRET),
        "RFC 6749 2.3.1 form-encoded": (quote_plus(app.client_id), quote_plus(AWKWARD_SECRET)),
        "percent-encoded": (quote(app.client_id, safe=""), quote(AWKWARD_SECRET, safe="")),
    }
    for label, (client_id, secret) in encodings.items():
        response = client.post(
            TOKEN_URL, data={"grant_type": "client_credentials"}, headers=basic(client_id, secret)
        )
        assert response.status_code == 200, f"{label}: {response.text}"
        assert reads_users(client, response.json()["access_token"]), label
    # The same secret in the form needs no extra care.
    assert client.post(TOKEN_URL, data=form_credentials(app)).status_code == 200


def test_refused_client_credentials_are_401_invalid_client(
    client: TestClient, engine: Engine
) -> None:
    app = register(engine, service_scopes="user:read")
    other = register(engine, service_scopes="user:read")
    secret = app.client_secret
    form_cases = {
        "wrong secret": (app.client_id, secret + "x"),
        "another application's secret": (app.client_id, other.client_secret),
        "unknown client_id": ("999", secret),
        "non-numeric client_id": ("abc", secret),
        "decimal point": ("1.0", secret),
        "empty client_id": ("", secret),
        "negative": ("-1", secret),
        "too large for any integer column": ("9" * 40, secret),
        "fullwidth digit": ("\uff11", secret),
        "empty secret": (app.client_id, ""),
    }
    for label, (client_id, client_secret) in form_cases.items():
        form = {"grant_type": "client_credentials", "client_id": client_id}
        response = client.post(TOKEN_URL, data={**form, "client_secret": client_secret})
        assert response.status_code == 401, f"form, {label}: {response.text}"
        assert_oauth_error(response, 401, "invalid_client")
        response = client.post(
            TOKEN_URL,
            data={"grant_type": "client_credentials"},
            headers=basic(client_id, client_secret),
        )
        assert response.status_code == 401, f"Basic, {label}: {response.text}"
        assert_oauth_error(response, 401, "invalid_client")
        # RFC 6749 5.2: a failed Basic authentication is answered with a Basic challenge.
        assert response.headers["www-authenticate"].startswith("Basic "), label

    no_credentials = {"grant_type": "client_credentials"}
    other_cases = {
        "no credentials at all": (no_credentials, {}),
        "only a client_id": ({**no_credentials, "client_id": app.client_id}, {}),
        "Basic, not base64": (no_credentials, {"Authorization": "Basic ***"}),
        "Basic, no colon": (no_credentials, {"Authorization": "Basic MTIz"}),  # "123"
        "Basic, not UTF-8": (no_credentials, {"Authorization": "Basic //7/Ov8="}),
        "Basic, empty": (no_credentials, {"Authorization": "Basic"}),
    }
    for label, (form, headers) in other_cases.items():
        response = client.post(TOKEN_URL, data=form, headers=headers)
        assert response.status_code == 401, f"{label}: {response.text}"
        assert_oauth_error(response, 401, "invalid_client")


def test_suspended_application_gets_invalid_client_until_reinstated(
    client: TestClient, engine: Engine
) -> None:
    app = register(engine, service_scopes="user:read")
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app.id, True)
    assert_oauth_error(client.post(TOKEN_URL, data=form_credentials(app)), 401, "invalid_client")
    response = client.post(
        TOKEN_URL,
        data={"grant_type": "client_credentials"},
        headers=basic(app.client_id, app.client_secret),
    )
    assert_oauth_error(response, 401, "invalid_client")
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app.id, False)
    assert client.post(TOKEN_URL, data=form_credentials(app)).status_code == 200


def test_an_application_changed_after_its_grants_is_held_to_its_change(
    client: TestClient, engine: Engine
) -> None:
    """The quick grant keeps the application it read (oauth/quick_grant.py); a change made
    after it, through another connection as another process would, holds at once: a suspended
    application gets no token, a rotated secret's old value is refused and its new one works,
    narrowed scopes are what a token is then granted."""
    app = register(engine, service_scopes="user:read volunteer:read")

    def grant(secret: str) -> Any:
        return client.post(
            TOKEN_URL,
            data={"grant_type": "client_credentials"},
            headers=basic(app.client_id, secret),
        )

    def tokens() -> int:
        with read_session(engine) as session:
            return len(session.scalars(select(AccessToken.id)).all())

    assert grant(app.client_secret).json()["scope"] == "user:read volunteer:read"
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app.id, True)
    written = tokens()
    assert_oauth_error(grant(app.client_secret), 401, "invalid_client")
    assert tokens() == written
    with write_session(engine) as session:
        set_suspended(session, Actor("test"), app.id, False)
    assert grant(app.client_secret).status_code == 200

    with write_session(engine) as session:
        _, new_secret = rotate_secret(session, Actor("test"), app.id)
    assert_oauth_error(grant(app.client_secret), 401, "invalid_client")
    assert grant(new_secret).status_code == 200
    assert_oauth_error(grant(app.client_secret), 401, "invalid_client")

    with write_session(engine) as session:
        session.execute(
            update(Application).where(Application.id == app.id).values(service_scopes="user:read")
        )
    assert grant(new_secret).json()["scope"] == "user:read"


def test_the_quick_grant_keeps_only_live_approved_applications_and_a_bounded_number() -> None:
    known = KnownClients()
    assert known.read(1, None) is None  # no such application
    assert known.read(2, ("hash", True, "user:read")) is None  # suspended
    assert known.read(3, ("hash", False, "")) is None  # no service scopes: not this grant's
    assert [known.get(n) for n in (1, 2, 3)] == [None, None, None]
    assert known.read(4, ("hash", False, "user:read")) == ("hash", "user:read")
    assert known.get(4) == ("hash", "user:read")
    assert known.read(4, ("hash", True, "user:read")) is None  # suspended since: forgotten
    assert known.get(4) is None
    for number in range(KnownClients.LIMIT + 10):
        known.read(number, ("hash", False, "user:read"))
    assert len(known._known) <= KnownClients.LIMIT


def test_bearer_header_cookies_and_csrf_play_no_part(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read")
    # api.md 5: every request carries a bearer header, the token request too; it is ignored.
    response = client.post(TOKEN_URL, data=form_credentials(app), headers=bearer("xyz"))
    assert response.status_code == 200, response.text
    assert reads_users(client, response.json()["access_token"])

    # The Django site: GET / first, then the token request with the cookies and a CSRF header.
    assert client.get("/").status_code == 200
    client.cookies.set("session", "a-session-cookie")
    client.cookies.set("csrftoken", "a-csrf-token")
    response = client.post(
        TOKEN_URL, data=form_credentials(app), headers={"X-CSRF-Token": "a-csrf-token"}
    )
    assert response.status_code == 200, response.text
    # A cookie is no client authentication.
    response = client.post(TOKEN_URL, data={"grant_type": "client_credentials"})
    assert_oauth_error(response, 401, "invalid_client")


# --- scopes --------------------------------------------------------------------------------


def test_omitted_scope_means_every_approved_scope_and_a_subset_is_kept_exactly(
    client: TestClient, engine: Engine
) -> None:
    app = register(engine, service_scopes=TIME_CLOCK_SCOPES)
    asked = {
        None: TIME_CLOCK_SCOPES.split(),
        "": TIME_CLOCK_SCOPES.split(),  # RFC 6749 3.1: an empty parameter is an omitted one
        "volunteer:read": ["volunteer:read"],
        "registration:read user:read": ["registration:read", "user:read"],
        "user:read user:read": ["user:read"],
    }
    for scope, expected in asked.items():
        form = form_credentials(app) if scope is None else form_credentials(app, scope=scope)
        response = client.post(TOKEN_URL, data=form)
        assert response.status_code == 200, f"scope={scope!r}: {response.text}"
        token = response.json()["access_token"]
        assert granted_scopes(response.json()["scope"]) == expected, f"scope={scope!r}"
        assert reads_users(client, token) == ("user:read" in expected), f"scope={scope!r}"
        assert reads_volunteers(client, token) == ("volunteer:read" in expected), f"{scope!r}"


def test_repeated_scope_fields_all_count_as_the_discord_bot_sends_them(
    client: TestClient, engine: Engine
) -> None:
    # The bot hard-codes client_id "1" and sends requests' data={"scope": [...]}.
    bot = register(engine, service_scopes="user:read volunteer:read registration:read", client_id=1)
    assert bot.client_id == "1"
    for pair in (["user:read", "registration:read"], ["user:read", "volunteer:read"]):
        response = client.post(TOKEN_URL, data=form_credentials(bot, scope=pair))
        assert response.status_code == 200, response.text
        assert set(granted_scopes(response.json()["scope"])) == set(pair)
        token = response.json()["access_token"]
        assert reads_users(client, token)
        assert reads_volunteers(client, token) == ("volunteer:read" in pair)
        with read_session(engine) as session:
            stored = session.scalar(
                select(AccessToken.scope).where(AccessToken.token_hash == token_key(token))
            )
        assert stored is not None
        assert set(stored.split(" ")) == set(pair)


def test_scope_encodings_on_the_wire(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read volunteer:read")
    credentials = f"grant_type=client_credentials&client_id={app.client_id}"
    credentials += f"&client_secret={app.client_secret}"
    for wire in (
        "user:read+volunteer:read",
        "user:read%20volunteer:read",
        "user%3Aread+volunteer%3Aread",
        "user:read&scope=volunteer:read",
        "user:read+volunteer:read&scope=user:read",
    ):
        response = client.post(TOKEN_URL, content=f"{credentials}&scope={wire}", headers=FORM)
        assert response.status_code == 200, f"{wire}: {response.text}"
        assert sorted(granted_scopes(response.json()["scope"])) == ["user:read", "volunteer:read"]


def test_scopes_that_cannot_be_granted_are_refused(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read volunteer:read")
    for scope in (
        "user:write",  # no such scope
        "USER:READ",  # names are case-sensitive
        "pii:basic",  # a user's scope, not a service's
        "pii:email user:read",
        "user:roles:update",  # real, but not approved for this application
        "user:read registration:read",
        # Echoing these in error_description would break RFC 6749 5.2 (Authlib raises: a 500).
        "caf\u00e9:read",
        '"quoted"',
        "back\\slash",
        "user:read\tvolunteer:read",  # the separator is a single space
        "x" * 3000,
    ):
        response = client.post(TOKEN_URL, data=form_credentials(app, scope=scope))
        assert response.status_code == 400, f"scope={scope!r}: {response.text}"
        assert_oauth_error(response, 400, "invalid_scope")
    response = client.post(
        TOKEN_URL,
        data=form_credentials(app, scope=["user:read", "pii:basic"]),
    )
    assert_oauth_error(response, 400, "invalid_scope")
    # The registry refuses a user's scope even where an application's row lists it (written
    # around the service, which does not let it be approved).
    with write_session(engine) as session:
        session.execute(
            update(Application).values(service_scopes="user:read volunteer:read pii:basic")
        )
    response = client.post(TOKEN_URL, data=form_credentials(app, scope="pii:basic"))
    assert_oauth_error(response, 400, "invalid_scope")
    with read_session(engine) as session:
        assert session.scalars(select(AccessToken)).all() == []

    # An application approved for no service scope may not use client_credentials at all.
    obo_only = register(engine, obo_scopes="pii:basic")
    for form in (form_credentials(obo_only), form_credentials(obo_only, scope="pii:basic")):
        assert_oauth_error(client.post(TOKEN_URL, data=form), 400, "unauthorized_client")


# --- the response and the stored token -----------------------------------------------------


def test_token_is_stored_only_as_its_sha256(client: TestClient, engine: Engine) -> None:
    """A token is the millisecond it was made (11 hex digits) and 256 random bits; what is
    stored is that millisecond and the SHA-256 of the whole token."""
    app = register(engine, service_scopes="user:read")
    before = time.time_ns() // 1_000_000
    response = client.post(TOKEN_URL, data=form_credentials(app))
    after = time.time_ns() // 1_000_000
    token = response.json()["access_token"]
    stamp, secret = token[:11], token[11:]
    assert before <= int(stamp, 16) <= after
    assert len(base64.urlsafe_b64decode(secret + "=")) == 32
    digest = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=")
    with read_session(engine) as session:
        row = session.scalars(select(AccessToken)).one()
        assert row.token_hash == stamp + digest.decode()
        assert row.application_id == app.id
        assert row.user_id is None
        assert row.grant_id is None
        assert row.scope == "user:read"
        expires_in = (row.expires_at - row.created_at).total_seconds()
        assert expires_in == 3600
    assert token not in database_text(engine)
    assert secret not in database_text(engine)


def test_new_tokens_keys_come_in_the_order_the_tokens_were_made(
    client: TestClient, engine: Engine
) -> None:
    """Each new row adds to the end of the unique index on the stored keys, instead of on a
    page anywhere in it (oauth/tokens.py, new_token): the keys, read in the order the rows
    were written, begin with times that never go back, each its own token's."""
    app = register(engine, service_scopes="user:read")
    issued = []
    for _ in range(12):
        issued.append(client.post(TOKEN_URL, data=form_credentials(app)).json()["access_token"])
        time.sleep(0.002)  # a few milliseconds apart: times that differ
    with read_session(engine) as session:
        keys = list(session.scalars(select(AccessToken.token_hash).order_by(AccessToken.id)))
    assert keys == [token_key(token) for token in issued]
    stamps = [key[:11] for key in keys]
    assert stamps == [token[:11] for token in issued]
    assert stamps == sorted(stamps)
    assert len(set(stamps)) > 1


def test_access_token_ttl_is_configurable(engine: Engine, database_url: str) -> None:
    app = register(engine, service_scopes="user:read")
    short = create_app(load_settings(database_url=database_url, access_token_ttl=120))
    with TestClient(short, base_url="https://testserver") as client:
        before = utcnow()
        response = client.post(TOKEN_URL, data=form_credentials(app))
        assert response.status_code == 200, response.text
        assert response.json()["expires_in"] == 120
        with read_session(engine) as session:
            expires_at = session.scalars(select(AccessToken.expires_at)).one()
        assert before + dt.timedelta(seconds=119) <= expires_at
        assert expires_at <= utcnow() + dt.timedelta(seconds=120)


def test_a_new_token_leaves_the_older_live_tokens_working(
    client: TestClient, engine: Engine
) -> None:
    app = register(engine, service_scopes="user:read")
    tokens = [client.post(TOKEN_URL, data=form_credentials(app)).json()["access_token"]]
    for _ in range(3):  # the Django site: a new token for every lookup
        tokens.append(client.post(TOKEN_URL, data=form_credentials(app)).json()["access_token"])
    assert len(set(tokens)) == 4
    assert all(reads_users(client, token) for token in tokens)


# --- malformed requests --------------------------------------------------------------------


def test_grant_type_must_be_given_and_supported(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read")
    cases = {
        # RFC 6749 5.2: a missing (or, 3.1, empty) required parameter is invalid_request.
        None: "invalid_request",
        "": "invalid_request",
        "password": "unsupported_grant_type",
        "implicit": "unsupported_grant_type",
        "something": "unsupported_grant_type",
        "CLIENT_CREDENTIALS": "unsupported_grant_type",  # values are case-sensitive
    }
    for grant_type, error in cases.items():
        form = form_credentials(app, username="someone", password="a password")
        if grant_type is None:
            del form["grant_type"]
        else:
            form["grant_type"] = grant_type
        response = client.post(TOKEN_URL, data=form)
        assert response.status_code == 400, f"grant_type={grant_type!r}: {response.text}"
        assert response.json()["error"] == error, f"grant_type={grant_type!r}"
        assert_oauth_error(response, 400, error)


def test_malformed_bodies_are_invalid_request(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read")
    good = urlencode(form_credentials(app))
    bodies = {
        "client_id twice": good + f"&client_id={app.client_id}",
        "grant_type twice": good + "&grant_type=client_credentials",
        "client_secret twice": good + f"&client_secret={app.client_secret}",
    }
    for label, body in bodies.items():
        response = client.post(TOKEN_URL, content=body, headers=FORM)
        assert response.status_code == 400, f"{label}: {response.text}"
        assert_oauth_error(response, 400, "invalid_request")

    raw = {
        "not UTF-8": (good.encode() + b"&scope=user%3Aread\xff\xfe", FORM),
        "not JSON": (b'{"grant_type": ', {"content-type": "application/json"}),
        "JSON, not an object": (b'["client_credentials"]', {"content-type": "application/json"}),
    }
    for label, (content, headers) in raw.items():
        response = client.post(TOKEN_URL, content=content, headers=headers)
        assert response.status_code == 400, f"{label}: {response.text}"
        assert_oauth_error(response, 400, "invalid_request")
    # Larger than a token request can be: refused unread (regdesk.bodies).
    response = client.post(TOKEN_URL, content=f"{good}&state={'a' * 20_000}", headers=FORM)
    assert_oauth_error(response, 413, "invalid_request")


def test_json_bodies_are_accepted_too(client: TestClient, engine: Engine) -> None:
    app = register(engine, service_scopes="user:read volunteer:read")
    response = client.post(TOKEN_URL, json=form_credentials(app, scope="volunteer:read"))
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "volunteer:read"
    response = client.post(
        TOKEN_URL,
        json={"grant_type": "client_credentials", "scope": ["user:read", "volunteer:read"]},
        headers=basic(app.client_id, app.client_secret),
    )
    assert response.status_code == 200, response.text
    assert sorted(granted_scopes(response.json()["scope"])) == ["user:read", "volunteer:read"]


def test_other_methods_are_405_not_500(client: TestClient) -> None:
    for method in ("GET", "PUT", "DELETE"):
        response = client.request(method, TOKEN_URL)
        assert response.status_code == 405, f"{method}: {response.text}"
        assert response.headers["content-type"].startswith("application/json")
        assert "POST" in response.headers["allow"]


def test_a_body_arriving_in_pieces_is_read_whole_on_either_path(
    client: TestClient, app: FastAPI, engine: Engine
) -> None:
    """HTTP delivers a body in as many pieces as it likes: the quick client_credentials answer
    and the full path after it (a wrong secret here) both see the whole form."""
    registered = register(engine, service_scopes="user:read")

    async def post(pieces: list[bytes], secret: str) -> tuple[int, dict[str, Any]]:
        messages: list[Message] = [
            {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
            for i, piece in enumerate(pieces)
        ]
        sent: list[Message] = []

        async def receive() -> Message:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        credentials = basic(registered.client_id, secret)["Authorization"].encode()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "https",
            "path": TOKEN_URL,
            "raw_path": TOKEN_URL.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"testserver"),
                (b"content-type", b"application/x-www-form-urlencoded"),
                (b"authorization", credentials),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 443),
        }
        await app(scope, receive, send)
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return sent[0]["status"], json.loads(body)

    assert client.portal is not None  # the app's own event loop, where it reads its database
    pieces = [b"grant_type=client", b"_credentials&scope=user", b"%3Aread"]
    status, issued = client.portal.call(post, pieces, registered.client_secret)
    assert status == 200, issued
    assert issued["scope"] == "user:read"
    assert reads_users(client, issued["access_token"])
    status, refused = client.portal.call(post, pieces, "wrong")
    assert (status, refused["error"]) == (401, "invalid_client")
