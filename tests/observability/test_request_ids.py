"""The request id (observability/request_ids.py, observed.py): every answer carries one in
`X-Request-ID`, the client's own when it is short and plain, a new one otherwise; the audit
events a request records carry it; and a database error that ends a request is counted by
kind, on that answer too."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select, text

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor, record_event
from regdesk.db import read_session, write_session
from regdesk.observability.exposition import scrape
from regdesk.observability.request_ids import incoming_or_new, new_id
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, bearer
from tests.observability.support import add_user, register

NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def unraised(app: FastAPI) -> Iterator[TestClient]:
    """The app as a client sees it, a 500 answered rather than raised into the test."""
    with TestClient(app, base_url=PUBLIC_URL, raise_server_exceptions=False) as client:
        yield client


def test_every_answer_carries_a_request_id(engine: Engine, client: TestClient) -> None:
    tool = register(engine, service_scopes="user:read")
    user = add_user(engine)
    auth = (tool.client_id, tool.client_secret)
    quick = client.post("/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth)
    answers = {
        "quick token path": quick,
        "refused by the framework": client.post(
            "/api/oauth/token", data={"grant_type": "password"}, auth=auth
        ),
        "API": client.get(f"/api/v0/users/{user}", headers=bearer(quick.json()["access_token"])),
        "unauthenticated API": client.get(f"/api/v0/users/{user}"),
        "no such route": client.get("/no/such/place"),
        "page": client.get("/login"),
        "static file": client.get("/static/regdesk.css"),
        "probe": client.get("/readyz"),
        "transport refusal": client.get("/login", headers={"Host": "evil.example"}),
    }
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "quick token path": 200,
        "refused by the framework": 400,
        "API": 200,
        "unauthenticated API": 401,
        "no such route": 404,
        "page": 200,
        "static file": 200,
        "probe": 200,
        "transport refusal": 400,
    }
    ids = [answer.headers.get("X-Request-ID", "") for answer in answers.values()]
    assert all(NEW_ID.fullmatch(given) for given in ids), ids
    assert len(set(ids)) == len(ids), "each request has its own"


@pytest.mark.parametrize("given", ["abc-123", "A.b_C-9", "x" * 64])
def test_a_short_plain_incoming_id_is_sent_back(client: TestClient, given: str) -> None:
    answer = client.get("/no/such/place", headers={"X-Request-ID": given})
    assert answer.headers["X-Request-ID"] == given


@pytest.mark.parametrize(
    "given",
    [
        "x" * 65,  # too long to echo and store
        "two words",
        "<script>alert(1)</script>",
        "semi;colon",
        "crlf%0d%0aSet-Cookie:a=b",
        "",
    ],
)
def test_an_unsafe_incoming_id_is_replaced_by_a_new_one(client: TestClient, given: str) -> None:
    answer = client.get("/no/such/place", headers={"X-Request-ID": given})
    assert NEW_ID.fullmatch(answer.headers["X-Request-ID"])
    assert answer.headers["X-Request-ID"] != given


def test_non_ascii_incoming_id_is_replaced() -> None:
    assert NEW_ID.fullmatch(incoming_or_new("ünïcode".encode()))
    assert NEW_ID.fullmatch(incoming_or_new(b"\xff\xfe"))


def test_new_ids_are_random_and_never_repeat_across_reads_from_the_os() -> None:
    """Ids are read from the OS a batch at a time: past several batches, none repeats."""
    made = [new_id() for _ in range(2000)]
    assert all(NEW_ID.fullmatch(each) for each in made)
    assert len(set(made)) == len(made)


def test_a_forked_process_makes_ids_of_its_own() -> None:
    """A forked worker must not hand out the ids its parent had read but not used yet."""
    new_id()  # the parent holds a batch, nearly whole
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.close(read)
        os.write(write, " ".join(new_id() for _ in range(10)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        theirs = set(pipe.read().split())
    os.waitpid(child, 0)
    ours = {new_id() for _ in range(10)}
    assert len(theirs) == 10
    assert not theirs & ours


def test_the_audit_events_of_a_request_carry_its_id(engine: Engine, client: TestClient) -> None:
    tool = register(engine, service_scopes="user:read")
    auth = (tool.client_id, tool.client_secret)
    issued = client.post("/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth)
    revoked = client.post(
        "/api/oauth/revoke",
        data={"token": issued.json()["access_token"]},
        auth=auth,
        headers={"X-Request-ID": "revoke.check-1"},
    )
    assert revoked.status_code == 200
    assert revoked.headers["X-Request-ID"] == "revoke.check-1"
    with write_session(engine) as session:  # outside any request: no id
        record_event(session, Actor("cli:test"), "test.outside_a_request")
    with read_session(engine) as session:
        recorded = dict(session.execute(select(AuditEvent.action, AuditEvent.request_id)).all())
    assert recorded["oauth.token_revoked"] == "revoke.check-1"
    assert recorded["test.outside_a_request"] is None


def test_a_database_error_that_ends_a_request_is_counted_by_kind_and_answered_with_an_id(
    engine: Engine, unraised: TestClient, database_url: str
) -> None:
    tool = register(engine, service_scopes="user:read")
    issued = unraised.post(
        "/api/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(tool.client_id, tool.client_secret),
    )
    token = issued.json()["access_token"]
    # The tokens' table gone from under the server: the bearer guard's read fails there.
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE oauth_access_tokens RENAME TO tokens_away"))
    kind = "OperationalError" if database_url.startswith("sqlite") else "ProgrammingError"
    before = _database_errors(kind)
    answer = unraised.get("/api/users/current", headers=bearer(token))
    assert answer.status_code == (503 if kind == "OperationalError" else 500)
    assert NEW_ID.fullmatch(answer.headers["X-Request-ID"])
    assert _database_errors(kind) == before + 1
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE tokens_away RENAME TO oauth_access_tokens"))


def _database_errors(kind: str) -> float:
    """This process's count (the tests' apps share one in-process registry)."""
    wanted = f'regdesk_database_errors_total{{kind="{kind}"}} '
    for line in scrape().decode().splitlines():
        if line.startswith(wanted):
            return float(line.removeprefix(wanted))
    return 0.0
