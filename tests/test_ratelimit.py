"""Rate limits (ratelimit.py; decisions.md, Limits): per client on the API and on the token
endpoint, per address on the login form; one limit for every process through Redis; and
when Redis is out of reach, no limit at all rather than no service."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from jsonschema import Draft202012Validator
from limits import parse_many
from limits.storage import MemoryStorage
from sqlalchemy import Engine

from regdesk.app import create_app
from regdesk.audit.service import Actor
from regdesk.config import load_settings
from regdesk.db import make_engine, write_session
from regdesk.migrations.runner import upgrade
from regdesk.oauth.applications import create_application
from regdesk.ratelimit import KEY_PREFIX, RateLimits, instance_namespace
from tests import http_calls
from tests.client import TestClient
from tests.conftest import Apps, bearer, migrated_sqlite_url
from tests.helpers import live_servers, shared_redis_url
from tests.web.support import PASSWORD, log_in, make_user, session_cookie

TOKEN = "/api/oauth/token"
ROLES = "/api/v0/roles"  # a light API route (user:read)
HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")

Serve = Callable[..., TestClient]


@pytest.fixture
def engine(sqlite_url: str) -> Iterator[Engine]:
    """SQLite only: the limits do not touch the database."""
    engine = make_engine(migrated_sqlite_url(Path(sqlite_url.removeprefix("sqlite:///"))))
    yield engine
    engine.dispose()


@pytest.fixture
def serve(sqlite_url: str, engine: Engine) -> Iterator[Serve]:
    """`serve(**settings)`: the app with those settings on the test's database, running, as
    an HTTPS client sees it."""
    with ExitStack() as running:

        def start(**settings: Any) -> TestClient:
            app = create_app(load_settings(database_url=sqlite_url, **settings))
            return running.enter_context(TestClient(app, base_url="https://testserver"))

        yield start


@pytest.fixture
def redis_url() -> str:
    return shared_redis_url()


def forget_counters(url: str, secret_key: str) -> int:
    """Delete one deployment's counters from Redis; how many keys there were."""
    store = redis.Redis.from_url(url)
    try:
        keys = list(store.scan_iter(f"{KEY_PREFIX}:*/{instance_namespace(secret_key)}/*"))
        if keys:
            store.delete(*keys)
        return len(keys)
    finally:
        store.close()


def elsewhere(client: TestClient, address: str) -> TestClient:
    """The same running app, seen from another address (on the same event loop: the app's
    loop-owned connections serve that loop's thread only)."""
    other = TestClient(client.app, base_url="https://testserver", client=(address, 50000))
    other.portal = client.portal
    return other


def limit_headers(response: httpx.Response) -> tuple[int, int, int]:
    limit, remaining, reset = (int(response.headers[name]) for name in HEADERS)
    return limit, remaining, reset


def assert_unlimited(response: httpx.Response) -> None:
    assert not [name for name in response.headers if name.lower().startswith("ratelimit")]
    assert response.status_code != 429, response.text


# --- the API -------------------------------------------------------------------------------


def test_the_sixth_api_request_of_a_client_gets_429_and_another_client_does_not(
    serve: Serve, engine: Engine
) -> None:
    client = serve(api_rate_limit="5/minute")
    apps = Apps(engine, client)
    tool = apps.register(service_scopes="user:read registration:read")
    other = apps.register(service_scopes="user:read")
    token = apps.mint(tool, "user:read")

    seen = []
    for path in (ROLES, ROLES, "/api/v0/users/999999", ROLES, ROLES):  # a 404 counts as well
        response = client.get(path, headers=bearer(token))
        assert response.status_code in (200, 404), response.text
        limit, remaining, reset = limit_headers(response)
        assert limit == 5
        assert 1 <= reset <= 60
        seen.append(remaining)
    assert seen == [4, 3, 2, 1, 0]

    # Another token of the same application, even one that would get a 403: its client's limit.
    refused = client.get(ROLES, headers=bearer(apps.mint(tool, "registration:read")))
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])
    assert 1 <= wait <= 60
    assert refused.json() == {
        "errors": {
            "rateLimit": {
                "message": f"Too many requests. Try again in {wait} seconds.",
                "retryAfter": wait,
            }
        }
    }
    assert limit_headers(refused)[:2] == (5, 0)

    fine = client.get(ROLES, headers=bearer(apps.mint(other, "user:read")))
    assert fine.status_code == 200
    assert limit_headers(fine)[:2] == (5, 4)
    # No live token: no client to count against, and no headers.
    anonymous = client.get(ROLES, headers=bearer("invalid"))
    assert anonymous.status_code == 401
    assert_unlimited(anonymous)


@pytest.mark.parametrize(
    "limits",
    ["10/minute;3/hour", "3/minute;3/hour"],  # the hour alone is full; both are full
)
def test_the_most_restrictive_limit_decides(serve: Serve, engine: Engine, limits: str) -> None:
    client = serve(api_rate_limit=limits)
    apps = Apps(engine, client)
    token = apps.mint(apps.register(service_scopes="user:read"), "user:read")
    for remaining in (2, 1, 0):
        response = client.get(ROLES, headers=bearer(token))
        assert response.status_code == 200
        assert limit_headers(response)[:2] == (3, remaining)  # the one with fewest left
        assert limit_headers(response)[2] > 3500  # ... or, of equals, the longer wait
    refused = client.get(ROLES, headers=bearer(token))
    assert refused.status_code == 429
    # The wait is the hour's: within the minute, the hour would still refuse.
    assert 3500 < int(refused.headers["Retry-After"]) <= 3600
    assert refused.json()["errors"]["rateLimit"]["retryAfter"] == int(
        refused.headers["Retry-After"]
    )


def test_the_429_is_documented_and_fits_its_schema(serve: Serve, engine: Engine) -> None:
    client = serve(api_rate_limit="1/minute")
    apps = Apps(engine, client)
    token = apps.mint(apps.register(service_scopes="user:read"), "user:read")
    client.get(ROLES, headers=bearer(token))
    refused = client.get(ROLES, headers=bearer(token))
    assert refused.status_code == 429
    document = client.get("/openapi.json").json()
    described = document["paths"][ROLES]["get"]["responses"]["429"]
    schema = described["content"]["application/json"]["schema"]
    validator = Draft202012Validator({**schema, "components": document["components"]})
    assert [e.message for e in validator.iter_errors(refused.json())] == []
    assert validator.is_valid({"errors": {"rateLimit": {"message": "Too many."}}}) is False
    for endpoint in (TOKEN, "/api/oauth/revoke", "/api/oauth/introspect"):
        assert "429" in document["paths"][endpoint]["post"]["responses"]


# --- the token endpoint --------------------------------------------------------------------


def test_token_requests_count_against_their_client_only_once_it_authenticated(
    serve: Serve, engine: Engine
) -> None:
    client = serve(token_rate_limit="4/minute")
    apps = Apps(engine, client)
    tool = apps.register(service_scopes="user:read")
    other = apps.register(service_scopes="user:read")
    grant = {"grant_type": "client_credentials"}
    stranger = elsewhere(client, "198.51.100.7")
    for _ in range(6):  # the tool's id with wrong secrets, by Basic, by form, as `01`
        assert stranger.post(TOKEN, data=grant, auth=(tool.client_id, "wrong")).status_code == 401
        wrong = {**grant, "client_id": f"0{tool.client_id}", "client_secret": "x"}
        assert stranger.post(TOKEN, data=wrong).status_code == 401
    answers = [
        client.post(TOKEN, data=grant, auth=(tool.client_id, tool.client_secret)),
        client.post(
            "/api/oauth/introspect", data={"token": "x"}, auth=(tool.client_id, tool.client_secret)
        ),
        client.post(
            "/api/oauth/revoke",
            data={"token": "x", "client_id": tool.client_id, "client_secret": tool.client_secret},
        ),
        client.post(TOKEN, data=grant, auth=(tool.client_id, tool.client_secret)),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 200]
    assert [limit_headers(a)[:2] for a in answers] == [(4, 3), (4, 2), (4, 1), (4, 0)]

    refused = client.post(TOKEN, data=grant, auth=(tool.client_id, tool.client_secret))
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])
    assert 1 <= wait <= 60
    assert refused.json() == {
        "error": "too_many_requests",
        "error_description": f"Too many requests from this client. Try again in {wait} seconds.",
    }
    assert refused.headers["Cache-Control"] == "no-store"
    assert limit_headers(refused)[:2] == (4, 0)

    issued = client.post(TOKEN, data=grant, auth=(other.client_id, other.client_secret))
    assert issued.status_code == 200
    assert limit_headers(issued)[:2] == (4, 3)


def test_failed_client_authentications_count_against_the_senders_address(
    serve: Serve, engine: Engine
) -> None:
    client = serve(token_failure_rate_limit="3/minute")
    apps = Apps(engine, client)
    tool = apps.register(service_scopes="user:read")
    grant = {"grant_type": "client_credentials"}
    guesser = elsewhere(client, "198.51.100.7")
    wrong = [
        guesser.post(TOKEN, data=grant, auth=(tool.client_id, "wrong")),
        guesser.post("/api/oauth/revoke", data={"token": "x"}, auth=("999", "x")),
        guesser.post("/api/oauth/introspect", data={"token": "x"}),  # no credentials at all
    ]
    assert [a.status_code for a in wrong] == [401, 401, 401]
    assert [limit_headers(a)[:2] for a in wrong] == [(3, 2), (3, 1), (3, 0)]

    # Spent: refused before its credentials are checked, even the right ones (one could be a
    # lucky guess), on the quick path and on Authlib's alike.
    for form in (grant, {**grant, "scope": "pii:basic"}):
        refused = guesser.post(TOKEN, data=form, auth=(tool.client_id, tool.client_secret))
        assert refused.status_code == 429, refused.text
        assert refused.json()["error_description"].startswith(
            "Too many failed client authentications from your address."
        )
        assert 1 <= int(refused.headers["Retry-After"]) <= 60

    # The tool itself, from its own address, is not touched.
    issued = client.post(TOKEN, data=grant, auth=(tool.client_id, tool.client_secret))
    assert issued.status_code == 200
    assert limit_headers(issued)[1] == 1199


# --- the login form ------------------------------------------------------------------------


def test_every_password_check_of_a_new_browser_counts_against_its_address(
    serve: Serve, engine: Engine
) -> None:
    client = serve(login_rate_limit="3/minute")
    make_user(engine)
    known = elsewhere(client, "testclient")  # the same address, a browser of its own
    assert log_in(known, "fox", PASSWORD).status_code == 303
    # A forged form checks no password: it is refused, and costs the address nothing.
    without_csrf = client.post("/login", data={"username": "fox", "password": PASSWORD})
    assert without_csrf.status_code == 403
    assert log_in(client, "fox", "wrong").status_code == 200
    last = log_in(client, "owl", "wrong")
    assert limit_headers(last)[:2] == (3, 0)

    refused = log_in(client, "fox", PASSWORD)
    assert refused.status_code == 429
    assert "Too many attempts to log in from your address." in refused.text
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert session_cookie(client) is None

    assert log_in(elsewhere(client, "198.51.100.7"), "fox", PASSWORD).status_code == 303
    # The browser that signed in before is not held up by the others at its address.
    known.cookies.delete("regdesk_session")
    assert log_in(known, "fox", PASSWORD).status_code == 303


def test_an_ipv6_client_is_counted_by_its_64(serve: Serve, engine: Engine) -> None:
    client = serve(login_rate_limit="1/minute")
    make_user(engine)
    assert log_in(elsewhere(client, "2001:db8:1:2::1"), "fox", "wrong").status_code == 200
    assert log_in(elsewhere(client, "2001:db8:1:2::ffff"), "fox", PASSWORD).status_code == 429
    assert log_in(elsewhere(client, "2001:db8:1:3::1"), "fox", PASSWORD).status_code == 303


# --- off, and misconfigured ----------------------------------------------------------------


def test_off_means_no_limit_and_no_headers(serve: Serve, engine: Engine) -> None:
    client = serve(
        rate_limits="off",
        api_rate_limit="1/minute",
        token_rate_limit="1/minute",
        login_rate_limit="1/minute",
    )
    apps = Apps(engine, client)
    tool = apps.register(service_scopes="user:read")
    make_user(engine)
    for _ in range(3):
        issued = client.post(
            TOKEN,
            data={"grant_type": "client_credentials"},
            auth=(tool.client_id, tool.client_secret),
        )
        assert issued.status_code == 200
        assert_unlimited(issued)
        listed = client.get(ROLES, headers=bearer(issued.json()["access_token"]))
        assert listed.status_code == 200
        assert_unlimited(listed)
        assert_unlimited(log_in(client, "fox", "wrong"))


def test_a_limit_that_does_not_parse_stops_the_start(sqlite_url: str) -> None:
    with pytest.raises(ValueError, match="REGDESK_TOKEN_RATE_LIMIT: 'lots' is not a rate limit"):
        create_app(load_settings(database_url=sqlite_url, token_rate_limit="lots"))


# --- Redis: shared by every process; and failing open ----------------------------------------


def test_two_server_processes_share_one_limit_through_redis(
    sqlite_url: str, redis_url: str
) -> None:
    secret_key = secrets.token_urlsafe(32)  # this deployment's namespace in Redis
    settings = {
        "REGDESK_REDIS_URL": redis_url,
        "REGDESK_API_RATE_LIMIT": "10/minute",
        "REGDESK_SECRET_KEY": secret_key,
    }
    try:
        with live_servers(sqlite_url, 2, settings) as (first, second):
            engine = make_engine(sqlite_url)
            with write_session(engine) as session:
                application, secret = create_application(
                    session, Actor("test"), name="Tool", service_scopes="user:read"
                )
            engine.dispose()
            issued = http_calls.post(
                f"{first}/api/oauth/token",
                data={"grant_type": "client_credentials"},
                auth=(str(application.id), secret),
            )
            assert issued.status_code == 200, issued.text
            token = bearer(issued.json()["access_token"])

            remaining = []
            for number in range(10):
                server = (first, second)[number % 2]
                response = http_calls.get(f"{server}{ROLES}", headers=token)
                assert response.status_code == 200, response.text
                remaining.append(int(response.headers["RateLimit-Remaining"]))
            assert remaining == list(range(9, -1, -1))  # one count, whichever server answers
            for server in (first, second):
                refused = http_calls.get(f"{server}{ROLES}", headers=token)
                assert refused.status_code == 429
                assert refused.json()["errors"]["rateLimit"]["retryAfter"] == int(
                    refused.headers["Retry-After"]
                )
        assert forget_counters(redis_url, secret_key) > 0  # the counts were in Redis
    finally:
        forget_counters(redis_url, secret_key)


def test_two_deployments_on_one_redis_do_not_share_counters(
    serve: Serve, engine: Engine, redis_url: str, tmp_path: Path
) -> None:
    # Client ids start at 1 in every deployment: their keys must still differ.
    keys = [secrets.token_urlsafe(32), secrets.token_urlsafe(32)]
    other_url = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    other_engine = make_engine(other_url)
    upgrade(other_engine)
    try:
        ours = serve(redis_url=redis_url, api_rate_limit="1/minute", secret_key=keys[0])
        theirs_app = create_app(
            load_settings(
                database_url=other_url,
                redis_url=redis_url,
                api_rate_limit="1/minute",
                secret_key=keys[1],
            )
        )
        with TestClient(theirs_app, base_url="https://testserver") as theirs:
            tokens = []
            for running, database in ((ours, engine), (theirs, other_engine)):
                apps = Apps(database, running)
                registered = apps.register(service_scopes="user:read")
                assert registered.client_id == "1"
                tokens.append(apps.mint(registered, "user:read"))
            assert ours.get(ROLES, headers=bearer(tokens[0])).status_code == 200
            assert theirs.get(ROLES, headers=bearer(tokens[1])).status_code == 200
            assert ours.get(ROLES, headers=bearer(tokens[0])).status_code == 429
        # Each deployment's own: its token request's counter and its API requests'.
        assert [forget_counters(redis_url, key) for key in keys] == [2, 2]
    finally:
        other_engine.dispose()
        for key in keys:
            forget_counters(redis_url, key)


def test_an_unreachable_redis_fails_open(
    serve: Serve, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    client = serve(
        redis_url="redis://127.0.0.1:1/0",  # nothing listens there
        api_rate_limit="1/minute",
        token_rate_limit="1/minute",
    )
    apps = Apps(engine, client)
    tool = apps.register(service_scopes="user:read")
    with caplog.at_level(logging.WARNING, logger="regdesk.ratelimit"):
        for _ in range(3):
            issued = client.post(
                TOKEN,
                data={"grant_type": "client_credentials"},
                auth=(tool.client_id, tool.client_secret),
            )
            assert issued.status_code == 200
            assert_unlimited(issued)
            listed = client.get(ROLES, headers=bearer(issued.json()["access_token"]))
            assert listed.status_code == 200
            assert_unlimited(listed)
    warnings = [r.getMessage() for r in caplog.records if r.name == "regdesk.ratelimit"]
    assert len(warnings) == 1, warnings
    assert "WITHOUT rate limits" in warnings[0]


class FlakyStore(MemoryStorage):
    """Memory that fails like an unreachable Redis while `down`."""

    down = False
    base_exceptions = redis.RedisError

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if self.down:
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379.")
        return super().acquire_entry(key, limit, expiry, amount)


def test_an_outage_is_warned_about_once_a_minute_and_the_store_is_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [1000.0]
    store = FlakyStore()
    limits = RateLimits(store, {"api": parse_many("2/minute")}, shared=True, clock=lambda: now[0])

    def count() -> int | None:
        verdict = limits.count("api", ["1"], "ns")
        return None if verdict is None else verdict.remaining

    assert count() == 1
    store.down = True
    with caplog.at_level(logging.WARNING, logger="regdesk.ratelimit"):
        assert count() is None  # served, unlimited
        now[0] += 4
        assert count() is None  # resting: not even tried
        now[0] += 2
        assert count() is None  # tried again, still down: no second warning within the minute
        now[0] += 60
        assert count() is None  # a minute on: warned again
        store.down = False
        assert count() is None  # resting still
        now[0] += 6
        assert count() == 0  # back: the limit holds again
    messages = [r.getMessage() for r in caplog.records if r.name == "regdesk.ratelimit"]
    assert [m.split(":")[0] for m in messages] == [
        "rate-limit store unreachable, requests are served WITHOUT rate limits until it answers",
        "rate-limit store unreachable, requests are served WITHOUT rate limits until it answers",
        "rate-limit store answers again",
    ]
