"""The API holds its own OpenAPI document under generated input (schemathesis): no 5xx, every
status, content type and body as documented, every error in its envelope.

Each operation of `/openapi.json` gets the coverage phase's edge cases and `REGDESK_FUZZ_EXAMPLES`
generated inputs, valid and invalid, sent with real tokens to the in-process app over a
database of demo and imported records; the inputs tried go to `build/fuzz.json`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis import Case
from schemathesis.python import asgi
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from regdesk.app import create_app
from regdesk.config import load_settings
from tests.client import TestClient
from tests.conftest import Apps
from tests.fuzz.support import (
    Tally,
    build_world,
    config,
    error_envelope,
    error_problem,
    install,
    seed,
)


@pytest.fixture
def tally(database_url: str) -> Iterator[Tally]:
    counted = Tally(make_url(database_url).get_backend_name())
    started = time.perf_counter()
    yield counted
    counted.write(time.perf_counter() - started)


@pytest.fixture
def api_schema(
    request: pytest.FixtureRequest,
    database_url: str,
    engine: Engine,
    client: TestClient,
    apps: Apps,
    tally: Tally,
) -> Iterator[schemathesis.schemas.BaseSchema]:
    # schemathesis 4.32 labels each operation's subtest by rewriting the test's
    # `Node._nodeid`, which pytest 9.2's nodes no longer have: give it one to read.
    request.node._nodeid = request.node.nodeid
    world = build_world(engine, client, apps)
    # A second app over the same database, for schemathesis to drive on its own event-loop
    # thread: the fixtures' app reads through a connection owned by `client`'s (db.LoopReads).
    # Rate limits off: tests/test_ratelimit.py has them, and here they would answer only 429s.
    fuzzed = create_app(load_settings(database_url=database_url, rate_limits="off"))
    document = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document, config=config())
    schema.app = fuzzed
    install(schema, world)
    print(f"fuzz seed: REGDESK_FUZZ_SEED={seed()} replays this run")
    yield schema
    asgi.shutdown_lifespans()


fuzzed_api = schemathesis.pytest.from_fixture("api_schema")


@fuzzed_api.parametrize()
def test_api_holds_its_document(case: Case[Any], tally: Tally) -> None:
    tally.tried(case)
    response = case.call_and_validate(additional_checks=[error_envelope])
    tally.answered(case, response)


API_ERROR = '{"errors": {"resource": {"message": "User not found."}}}'
OAUTH_ERROR = '{"error": "invalid_grant", "error_description": "The grant is invalid."}'
JSON = "application/json"


@pytest.mark.parametrize(
    ("path", "status", "content_type", "text", "accepted"),
    [
        ("/api/v0/users/{id}", 404, JSON, API_ERROR, True),
        ("/api/v0/users/{id}", 500, JSON, '{"errors": {"server": {"hash": "5f1c"}}}', True),
        ("/api/oauth/token", 400, JSON, OAUTH_ERROR, True),
        ("/api/oauth/token", 405, JSON, API_ERROR, True),
        ("/api/v0/users/{id}", 200, "text/html", "<p>not an error</p>", True),
        ("/api/v0/users/{id}", 404, "text/html", "<h1>Not Found</h1>", False),
        ("/api/v0/users/search", 400, JSON, '{"detail": [{"loc": ["body"]}]}', False),
        ("/api/v0/users/search", 400, JSON, "{not json", False),
        ("/api/v0/users/{id}", 401, JSON, '{"errors": {"authentication": {}}}', False),
        ("/api/v0/users/{id}", 500, JSON, '{"errors": {"server": {"message": "trace"}}}', False),
        (
            "/api/v0/roles",
            403,
            JSON,
            '{"errors": {"access": {"message": "a"}, "resource": {"message": "b"}}}',
            False,
        ),
        ("/api/oauth/token", 400, JSON, API_ERROR, False),
        ("/api/oauth/revoke", 400, JSON, '{"error": "unsupported_token_type"}', False),
        (
            "/api/oauth/introspect",
            400,
            JSON,
            '{"error": "unsupported_token_type", "error_description": ""}',
            False,
        ),
    ],
)
def test_the_envelope_check_passes_the_envelopes_only(
    path: str, status: int, content_type: str, text: str, accepted: bool
) -> None:
    assert (error_problem(path, status, content_type, text) is None) is accepted
