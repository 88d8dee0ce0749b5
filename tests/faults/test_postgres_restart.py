"""PostgreSQL restarted under load: `regdesk serve` reconnects by itself and answers again,
without a restart of its own; while the database is away each request gets at once a clean
503 in the error envelope, never a hang, a dropped connection or a wrong answer (a 401 for a
good token).

The cluster is the test's own (tests/faults/cluster.py): it runs whether or not
REGDESK_TEST_POSTGRES_URL is set, and the shared server is never touched. Both shutdown modes
(`-m fast`, `-m immediate`) are hit twice: `pg_ctl restart` (every connection regdesk holds is
cut, the server is back at once), then `pg_ctl stop`, an outage every kind of request is seen
to run into, and `pg_ctl start`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.demo import load_demo
from regdesk.migrations.runner import upgrade
from regdesk.oauth.applications import create_application
from regdesk.users.models import User
from tests import http_calls
from tests.faults.cluster import Cluster
from tests.faults.support import FaultLedger, Server, bearer, wait_until

THREADS = 4
RECOVERY_LIMIT = 30.0  # seconds from the database being back to every request answering 200
HANG_LIMIT = 20.0  # no request may take longer, outage or not


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    try:
        made.start()
        yield made
    finally:
        made.destroy()


@dataclass(frozen=True)
class Answer:
    kind: str
    started: float
    ended: float
    status: int | None  # None: no answer at all
    body: Any
    retry_after: str | None = None


class Load:
    """Threads sending a mix of requests over and over: the hot paths that read on the event
    loop's own connection (searches, a user, client_credentials grants), one that goes
    through the pool in a worker thread (introspection), and the health probe."""

    def __init__(self, base: str, client_id: str, secret: str, token: str, user_id: int) -> None:
        auth = (client_id, secret)
        self.requests: dict[str, Callable[[httpx.Client], httpx.Response]] = {
            "volunteer search": lambda c: c.post(
                "/api/v0/volunteers/search", json={"limit": 5}, headers=bearer(token)
            ),
            "get user": lambda c: c.get(f"/api/v0/users/{user_id}", headers=bearer(token)),
            "token grant": lambda c: c.post(
                "/api/oauth/token", data={"grant_type": "client_credentials"}, auth=auth
            ),
            "introspection": lambda c: c.post(
                "/api/oauth/introspect", data={"token": token}, auth=auth
            ),
            "health": lambda c: c.get("/healthz"),
        }
        self.base = base
        self.answers: list[Answer] = []
        self.last_ok = dict.fromkeys(self.requests, 0.0)
        self.last_error = dict.fromkeys(self.requests, 0.0)
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(THREADS)
        ]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, failing: object, *_: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=HANG_LIMIT * 3)
        if failing is None:  # else the test fails already, on what went wrong first
            assert not any(thread.is_alive() for thread in self.threads), "a request hung"

    def _run(self, offset: int) -> None:
        kinds = list(self.requests)
        with http_calls.client(base_url=self.base, timeout=HANG_LIMIT * 2) as client:
            n = offset
            while not self.stopping.is_set():
                kind = kinds[n % len(kinds)]
                n += 1
                started = time.monotonic()
                retry_after = None
                try:
                    response = self.requests[kind](client)
                    status, body = response.status_code, _json(response)
                    retry_after = response.headers.get("retry-after")
                except httpx.HTTPError as error:
                    status, body = None, repr(error)
                answer = Answer(kind, started, time.monotonic(), status, body, retry_after)
                self.answers.append(answer)
                if status == 200:
                    self.last_ok[kind] = max(self.last_ok[kind], started)
                else:
                    self.last_error[kind] = max(self.last_error[kind], started)

    def all_answered_since(self, moment: float) -> bool:
        return all(started >= moment for started in self.last_ok.values())

    def all_refused_since(self, moment: float) -> bool:
        return all(started >= moment for started in self.last_error.values())


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def clean(answer: Answer) -> bool:
    """200, or what a server that cannot reach its database answers: 503, the error envelope
    (decisions.md, Errors: `{"errors": {"server": {"hash"}}}`) and when to try again."""
    if answer.status == 200:
        return True
    if answer.kind == "health":
        return answer.status == 503 and answer.body == {"status": "unavailable"}
    body = answer.body
    return (
        answer.status == 503
        and answer.retry_after is not None
        and isinstance(body, dict)
        and list(body) == ["errors"]
        and isinstance(body["errors"], dict)
        and list(body["errors"]) == ["server"]
        and isinstance(body["errors"]["server"].get("hash"), str)
    )


@pytest.fixture
def service(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[Server, Load]]:
    """`regdesk serve` on the cluster, with a small demo, and the load that will be sent."""
    url = cluster.create_database("regdesk")
    engine = make_engine(url)
    upgrade(engine)
    load_demo(engine, users=60, volunteers=20, seed=7, actor=Actor("test"))
    with write_session(engine) as session:
        application, secret = create_application(
            session, Actor("test"), name="Time Clock", service_scopes="user:read volunteer:read"
        )
        user_id = session.scalars(select(func.min(User.id))).one()
    engine.dispose()
    server = Server(url, tmp_path / "serve.log")
    base = server.start()
    try:
        client_id = str(application.id)
        token = http_calls.post(
            f"{base}/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(client_id, secret),
            timeout=60,
        ).json()["access_token"]
        yield server, Load(base, client_id, secret, token, user_id)
    finally:
        server.stop()


def test_the_service_reconnects_after_postgresql_restarts_under_load(
    service: tuple[Server, Load], cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    server, load = service
    pid = server.pid
    ledger = FaultLedger(request.node.nodeid, "postgresql")
    recoveries: list[float] = []
    outages: list[tuple[float, float]] = []

    def recovered(since: float, what: str) -> None:
        wait_until(
            lambda: load.all_answered_since(since),
            RECOVERY_LIMIT,
            f"every kind of request to answer 200 after {what}\n{server.tail()}",
            every=0.05,
        )
        recoveries.append(round(time.monotonic() - since, 2))

    with load:
        recovered(time.monotonic(), "starting")  # the load runs, everything answers
        for mode in ("fast", "immediate"):
            # A restart: every connection regdesk holds is cut, the server is back at once.
            cluster.pg_ctl("restart", mode)
            ledger.inject(f"pg_ctl restart -m {mode}")
            recovered(time.monotonic(), f"pg_ctl restart -m {mode}")

            # An outage: stopped until every kind of request has met it, then started again.
            stopped = time.monotonic()
            cluster.pg_ctl("stop", mode)
            wait_until(
                lambda: load.all_refused_since(stopped),  # noqa: B023 (called at once)
                RECOVERY_LIMIT,
                "every kind of request to be refused while the database is down",
                every=0.05,
            )
            cluster.pg_ctl("start")
            ledger.inject(f"pg_ctl stop -m {mode}, outage, pg_ctl start")
            outages.append((stopped, time.monotonic()))
            recovered(outages[-1][1], f"pg_ctl stop -m {mode} and start")

    # regdesk was never restarted: the same process answered throughout.
    assert server.alive(), server.tail()
    assert server.pid == pid
    answers = load.answers
    unclean = [a for a in answers if not clean(a)]
    assert not unclean, f"{len(unclean)} unclean answers, e.g. {unclean[:5]}\n{server.tail()}"
    slowest = max(answers, key=lambda a: a.ended - a.started)
    assert slowest.ended - slowest.started < HANG_LIMIT, slowest
    for began, ended in outages:
        during = [a for a in answers if began <= a.started and a.ended <= ended]
        assert {a.kind for a in during if a.status != 200} == set(load.requests)
    print(
        f"{len(answers)} requests, {sum(a.status != 200 for a in answers)} refused cleanly, "
        f"recovered in {recoveries} s, slowest {slowest.ended - slowest.started:.2f} s"
    )
