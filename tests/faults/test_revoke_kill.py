"""kill -9 of `regdesk serve` in the middle of revocations. Each revocation is one transaction
(decisions.md, Tokens): revoking a refresh token (RFC 7009) or revoking an application on the
account page takes the whole grant with every token it begot, revoking an access token takes
that token alone. After a restart on the same database each revocation is wholly done or not
at all, never half (an access token dead and its grant's refresh token alive); every one that
was answered is done; and the audit log records exactly those that are.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from regdesk.audit.models import AuditEvent
from regdesk.db import make_engine, read_session
from regdesk.oauth.models import AccessToken, Grant, RefreshToken
from tests import http_calls
from tests.conftest import Registered, scratch_database_url
from tests.faults.support import (
    BACKENDS,
    FaultLedger,
    Held,
    Server,
    bearer,
    freeze_between_commit_and_answer,
    obtain_grant,
    register_tool,
    wait_until,
)
from tests.oauth.test_code_flow_client_library import PASSWORD, form_with, page_forms
from tests.transfer.support import import_

BY_REFRESH, BY_ACCESS, ACCOUNTS = 16, 8, 6  # grants revoked each way; users on the account page
GRANTS_PER_ACCOUNT = 2  # the account page revokes every grant of the user to the application
THREADS = 8

# What a grant can be after the restart; anything else is half a revocation.
LIVE, REVOKED, ACCESS_REVOKED = "live", "revoked", "access token revoked alone"


@dataclass
class Revocation:
    """One revocation as a tool (or a user on the account page) asks for it."""

    how: str  # "refresh_token", "access_token" or "account page"
    grants: list[Held]
    browser: httpx.Client | None = None  # the user's signed-in browser, for the account page
    # "not sent", then "sent" (no answer yet, or lost), then "answered"; "done" once found
    # done after a restart (it is not sent again)
    state: str = "not sent"

    @property
    def done_state(self) -> str:
        return ACCESS_REVOKED if self.how == "access_token" else REVOKED


@dataclass
class Deployment:
    backend: str
    engine: Engine
    server: Server
    tool: Registered
    users: dict[str, int] = field(default_factory=dict)


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        people = import_(
            engine,
            {
                "users": [
                    {
                        "username": name,
                        "email": f"{name}@example.org",
                        "firstName": name.title(),
                        "lastName": "Fault",
                        "password": PASSWORD,
                    }
                    for name in ["fox", *(f"user{n}" for n in range(ACCOUNTS))]
                ]
            },
        )
        server = Server(url, tmp_path / "serve.log")
        try:
            yield Deployment(request.param, engine, server, register_tool(engine), people.users)
        finally:
            server.stop()
            engine.dispose()


def sign_in(base: str, username: str) -> httpx.Client:
    browser = http_calls.client(base_url=base, timeout=60)
    page = browser.get("/login")
    fields = form_with(page_forms(page.text), "password")
    fields.pop("__action__")
    fields.update(username=username, password=PASSWORD)
    assert browser.post("/login", data=fields).status_code == 303
    return browser


def revoke_form(browser: httpx.Client, tool: Registered) -> dict[str, str] | None:
    """The account page's Revoke form for the tool, or None when it is not connected."""
    page = browser.get("/account")
    assert page.status_code == 200, page.text
    forms = [f for f in page_forms(page.text) if f.get("application_id") == tool.client_id]
    return forms[0] if forms else None


class Revoker:
    """Threads sending the revocations at once, each until the server is gone."""

    def __init__(self, base: str, tool: Registered, revocations: list[Revocation]) -> None:
        self.base, self.tool = base, tool
        self.todo: queue.Queue[Revocation] = queue.Queue()
        for revocation in revocations:
            self.todo.put(revocation)
        self.answered = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(THREADS)]

    def __enter__(self) -> Revoker:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, failing: object, *_: object) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        if failing is None:  # else the test fails already, on what went wrong first
            assert not any(thread.is_alive() for thread in self.threads), "a request hung"

    def spent(self) -> bool:
        """Every thread has ended: each revocation it took is answered, none is in flight."""
        return not any(thread.is_alive() for thread in self.threads)

    def _run(self) -> None:
        with http_calls.client(base_url=self.base, timeout=60) as client:
            while True:
                try:
                    revocation = self.todo.get_nowait()
                except queue.Empty:
                    return
                revocation.state = "sent"
                try:
                    answered = send(client, self.tool, revocation)
                except httpx.TransportError:
                    return  # the server is gone
                if answered is not None:
                    self.errors.append(answered)
                    return
                revocation.state = "answered"
                with self._lock:
                    self.answered += 1


def send(client: httpx.Client, tool: Registered, revocation: Revocation) -> str | None:
    """Send it; None when answered as a success, else what went wrong."""
    if revocation.how == "account page":
        assert revocation.browser is not None
        form = revoke_form(revocation.browser, tool)
        if form is None:
            return "account page: the application is not listed"
        answer = revocation.browser.post(form.pop("__action__"), data=form)
        if answer.status_code == 303 and answer.headers["location"] == "/account?revoked":
            return None
        return f"account page: {answer.status_code} {answer.text[:200]}"
    held = revocation.grants[0]
    token = held.refresh_token if revocation.how == "refresh_token" else held.access_token
    answer = client.post(
        "/api/oauth/revoke",
        data={"token": token, "token_type_hint": revocation.how},
        auth=(tool.client_id, tool.client_secret),
    )
    return None if answer.status_code == 200 else f"{revocation.how}: {answer.text}"


# --- the checks -------------------------------------------------------------------------------


def grant_state(engine: Engine, held: Held) -> str:
    with read_session(engine) as session:
        grant = session.get(Grant, held.grant_id)
        access = session.scalars(
            select(AccessToken.revoked_at).where(AccessToken.grant_id == held.grant_id)
        ).all()
        refresh = session.scalars(
            select(RefreshToken.revoked_at).where(RefreshToken.grant_id == held.grant_id)
        ).all()
    assert grant is not None
    assert len(access) == len(refresh) == 1  # the first pair: none was refreshed
    marks = (grant.revoked_at is not None, access[0] is not None, refresh[0] is not None)
    states = {
        (False, False, False): LIVE,
        (True, True, True): REVOKED,
        (False, True, False): ACCESS_REVOKED,
    }
    return states.get(marks, f"half revoked (grant, access, refresh revoked: {marks})")


def events(engine: Engine, action: str) -> int:
    with engine.connect() as connection:
        return connection.execute(
            select(func.count()).select_from(AuditEvent).where(AuditEvent.action == action)
        ).scalar_one()


def check_database(engine: Engine, revocations: list[Revocation]) -> dict[str, int]:
    """Each revocation wholly done or not at all; done if answered, not if never sent."""
    done: dict[str, int] = {}
    for revocation in revocations:
        states = {grant_state(engine, held) for held in revocation.grants}
        where = f"{revocation.how} ({revocation.state}), grants {states}"
        assert len(states) == 1, f"{where}: one revocation, grants left in different states"
        (state,) = states
        assert state in (LIVE, revocation.done_state), where
        if revocation.state in ("answered", "done"):
            assert state == revocation.done_state, f"{where}: answered, yet not done"
        if revocation.state == "not sent":
            assert state == LIVE, where
        done[revocation.how] = done.get(revocation.how, 0) + (state != LIVE)
    # The audit event is written in the revocation's transaction: one per revocation done.
    assert events(engine, "oauth.token_revoked") == done["refresh_token"] + done["access_token"]
    assert events(engine, "oauth.grant_revoked") == done["account page"]
    return done


def check_through_api(
    base: str, engine: Engine, tool: Registered, revocations: list[Revocation]
) -> None:
    """The restarted server refuses exactly what the database says is revoked."""
    auth = (tool.client_id, tool.client_secret)
    with http_calls.client(base_url=base, timeout=60) as client:
        for revocation in revocations:
            for held in revocation.grants:
                state = grant_state(engine, held)
                me = client.get("/api/users/current", headers=bearer(held.access_token))
                assert me.status_code == (200 if state == LIVE else 401), (state, me.text)
                about: Any = client.post(
                    "/api/oauth/introspect",
                    data={"token": held.refresh_token, "token_type_hint": "refresh_token"},
                    auth=auth,
                ).json()
                assert about["active"] is (state != REVOKED), (state, about)
            if revocation.browser is not None:
                connected = revoke_form(revocation.browser, tool) is not None
                assert connected is (grant_state(engine, revocation.grants[0]) == LIVE)


# --- when to kill ----------------------------------------------------------------------------


def under_way(server: Server, revoker: Revoker, engine: Engine, todo: list[Revocation]) -> bool:
    """Revocations are under way: a quarter answered already, several waiting for an answer."""
    return bool(revoker.errors) or (
        revoker.answered >= len(todo) // 4 and sum(r.state == "sent" for r in todo) >= 2
    )


def done_unanswered(engine: Engine, todo: list[Revocation]) -> list[Revocation]:
    """The revocations visible in the database while their senders still wait for the answer."""
    waiting = [r for r in todo if r.state == "sent"]
    grant_ids = [held.grant_id for r in waiting for held in r.grants]
    if not grant_ids:
        return []
    with engine.connect() as connection:
        revoked = set(
            connection.execute(
                select(Grant.id).where(Grant.id.in_(grant_ids), Grant.revoked_at.is_not(None))
            ).scalars()
        )
        access_revoked = set(
            connection.execute(
                select(AccessToken.grant_id).where(
                    AccessToken.grant_id.in_(grant_ids), AccessToken.revoked_at.is_not(None)
                )
            ).scalars()
        )
    return [
        r
        for r in waiting
        if any(
            held.grant_id in (access_revoked if r.how == "access_token" else revoked)
            for held in r.grants
        )
    ]


def caught_between_commit_and_answer(
    server: Server, revoker: Revoker, engine: Engine, todo: list[Revocation]
) -> bool:
    """Freeze the server as soon as a revocation shows in the database unanswered (see
    `freeze_between_commit_and_answer`)."""
    if revoker.errors:
        return True  # stop here: the test fails on them
    return freeze_between_commit_and_answer(
        server, lambda: bool(done_unanswered(engine, todo)), lambda: revoker.answered
    )


# The second kill lands where a revocation is committed and its answer is lost; had it been
# written in more than one transaction, this is where half of it would be seen.
KILL_POINTS = {
    "revocations in flight": under_way,
    "a revocation committed, its answer not sent": caught_between_commit_and_answer,
}
# Revocations are used up as they are sent: on a quick machine every one left may be answered
# before a poll sees one committed and unanswered. Then fresh grants are revoked, this often.
ROUNDS = 5


def reached_or_spent(
    reached: Callable[[Server, Revoker, Engine, list[Revocation]], bool],
    server: Server,
    revoker: Revoker,
    engine: Engine,
    todo: list[Revocation],
) -> str:
    """At the kill point, "reached"; once every revocation was answered before it, "spent"."""
    if reached(server, revoker, engine, todo):
        return "reached"
    return "spent" if revoker.spent() else ""


def fresh_revocations(engine: Engine, base: str, tool: Registered, user: int) -> list[Revocation]:
    """Another round of the tool's own revocations, both kinds interleaved, of new grants."""
    fresh = [
        Revocation(how, [obtain_grant(engine, base, tool, user)])
        for how, count in (("refresh_token", BY_REFRESH), ("access_token", BY_ACCESS))
        for _ in range(count)
    ]
    fresh.sort(key=lambda r: r.grants[0].grant_id % 3)
    return fresh


# --- the test ---------------------------------------------------------------------------------


def test_a_killed_server_leaves_every_revocation_whole_or_undone(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    ledger = FaultLedger(request.node.nodeid, deployment.backend)
    server, engine, tool = deployment.server, deployment.engine, deployment.tool
    base = server.start()
    fox = deployment.users["fox"]
    revocations = fresh_revocations(engine, base, tool, fox)
    for n in range(ACCOUNTS):
        user = deployment.users[f"user{n}"]
        grants = [obtain_grant(engine, base, tool, user) for _ in range(GRANTS_PER_ACCOUNT)]
        revocations.append(Revocation("account page", grants, sign_in(base, f"user{n}")))
    revocations.sort(key=lambda r: r.grants[0].grant_id % 7)  # the three kinds interleaved

    try:
        for point, reached in KILL_POINTS.items():
            for round_ in range(1, ROUNDS + 1):
                todo = [r for r in revocations if r.state == "not sent"]
                with Revoker(base, tool, todo) as revoker:
                    got = wait_until(
                        partial(reached_or_spent, reached, server, revoker, engine, todo),
                        120,
                        point,
                        0.002,
                    )
                    if got == "reached":
                        server.kill()
                        in_flight = sum(r.state == "sent" for r in todo)
                        answered = revoker.answered
                assert not revoker.errors, revoker.errors
                if got == "reached":
                    break
                assert round_ < ROUNDS, f"{point}: missed in each of {ROUNDS} rounds"
                revocations += fresh_revocations(engine, base, tool, fox)
            base = server.start()
            for revocation in revocations:
                if revocation.browser is not None:  # its session outlives the process
                    revocation.browser.base_url = httpx.URL(base)

            done = check_database(engine, revocations)
            ledger.inject(
                "kill -9 regdesk serve",
                during="revocations",
                point=point,
                answered_before_kill=answered,
                in_flight_at_kill=in_flight,
                done=sum(done.values()),
                of=len(revocations),
            )
            check_through_api(base, engine, tool, revocations)
            for revocation in revocations:  # what is done stays so; the rest is sent again
                done_now = grant_state(engine, revocation.grants[0]) != LIVE
                revocation.state = "done" if done_now else "not sent"

        # What was not done is done now, by the restarted server.
        with http_calls.client(base_url=base, timeout=60) as client:
            for revocation in revocations:
                if revocation.state == "not sent":
                    assert send(client, tool, revocation) is None
                    revocation.state = "answered"
        assert all(
            grant_state(engine, held) == revocation.done_state
            for revocation in revocations
            for held in revocation.grants
        )
        check_database(engine, revocations)
        check_through_api(base, engine, tool, revocations)
    finally:
        for revocation in revocations:
            if revocation.browser is not None:
                revocation.browser.close()
