"""kill -9 of `regdesk serve` in the middle of refreshes. Consuming a refresh token and issuing
its successor are one transaction (decisions.md, Tokens; api.md 3.2), so after a restart on the
same database every refresh token a tool holds is either consumed with its successor issued
(the answer was lost with the server), or not consumed and still usable once. No grant has two
live refresh tokens, nor a consumed one without a successor: checked in the database, then
through the API of the restarted server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, select

from regdesk.db import make_engine, read_session
from regdesk.oauth.models import AccessToken, Grant, RefreshToken
from regdesk.oauth.tokens import token_key
from tests import http_calls
from tests.conftest import Registered, scratch_database_url
from tests.faults.support import (
    BACKENDS,
    FaultLedger,
    Held,
    Server,
    freeze_between_commit_and_answer,
    obtain_grant,
    register_tool,
    wait_until,
)
from tests.transfer.support import import_

GRANTS = 16
THREADS = 8  # each refreshes its own grants in turn, so no tool ever races itself
REFRESHES_BEFORE_KILL = 30
IN_FLIGHT_AT_KILL = 3


@dataclass
class Deployment:
    backend: str
    engine: Engine
    server: Server
    tool: Registered
    user_id: int


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        fox = import_(
            engine,
            {
                "users": [
                    {
                        "username": "fox",
                        "email": "fox@example.org",
                        "firstName": "Fae",
                        "lastName": "Fox",
                    }
                ]
            },
        )
        server = Server(url, tmp_path / "serve.log")
        try:
            yield Deployment(request.param, engine, server, register_tool(engine), fox.users["fox"])
        finally:
            server.stop()
            engine.dispose()


class RefreshLoad:
    """Threads that refresh their grants over and over, as tools whose tokens expire."""

    def __init__(self, base: str, tool: Registered, grants: list[Held]) -> None:
        self.base, self.tool = base, tool
        self.stopping = threading.Event()
        self.completed = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._run, args=(grants[n::THREADS],), daemon=True)
            for n in range(THREADS)
        ]

    def __enter__(self) -> RefreshLoad:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, failing: object, *_: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)
        if failing is None:  # else the test fails already, on what went wrong first
            assert not any(thread.is_alive() for thread in self.threads), "a request hung"

    def _run(self, grants: list[Held]) -> None:
        auth = (self.tool.client_id, self.tool.client_secret)
        with http_calls.client(base_url=self.base, timeout=60) as client:
            while not self.stopping.is_set():
                for held in grants:
                    held.in_flight = True
                    try:
                        answer = client.post(
                            "/api/oauth/token",
                            data={
                                "grant_type": "refresh_token",
                                "refresh_token": held.refresh_token,
                            },
                            auth=auth,
                        )
                    except httpx.TransportError:
                        return  # the server is gone: this answer is lost
                    if answer.status_code != 200:
                        self.errors.append(f"grant {held.grant_id}: {answer.text}")
                        return
                    tokens = answer.json()
                    held.access_token, held.refresh_token = (
                        tokens["access_token"],
                        tokens["refresh_token"],
                    )
                    held.history.append(held.refresh_token)
                    held.in_flight = False
                    with self._lock:
                        self.completed += 1

    def in_flight(self, grants: list[Held]) -> int:
        return sum(held.in_flight for held in grants)


# --- the checks -------------------------------------------------------------------------------


def check_chain(engine: Engine, held: Held) -> bool:
    """The grant's refresh tokens in the database form one unbroken chain, and the token the
    tool holds ends it or is just before its end. Whether the held token is still live."""
    with read_session(engine) as session:
        grant = session.get(Grant, held.grant_id)
        tokens = list(
            session.scalars(
                select(RefreshToken)
                .where(RefreshToken.grant_id == held.grant_id)
                .order_by(RefreshToken.id)
            )
        )
        access = {
            a.id: a
            for a in session.scalars(
                select(AccessToken).where(AccessToken.grant_id == held.grant_id)
            )
        }
    where = f"grant {held.grant_id}"
    assert grant is not None
    assert grant.revoked_at is None, where
    *consumed, last = tokens
    assert last.consumed_at is None, f"{where}: every refresh token is consumed"
    assert last.revoked_at is None, where
    for token, successor in zip(consumed, tokens[1:], strict=True):
        assert token.consumed_at is not None, f"{where}: two live refresh tokens"
        assert token.revoked_at is None, where
        assert successor.created_at >= token.consumed_at, f"{where}: no successor"
    # Every refresh token came with its access token, in the same transaction.
    assert len(access) == len(tokens), where
    assert {t.access_token_id for t in tokens} == set(access), where

    # What the tool saw is the chain itself, to its end or to one before the end.
    chain = [t.token_hash for t in tokens]
    seen = [token_key(t) for t in held.history]
    assert chain[: len(seen)] == seen, f"{where}: the chain is not the one the tool saw"
    assert len(chain) - len(seen) in (0, 1), f"{where}: {len(chain)} tokens, tool saw {len(seen)}"
    if len(chain) == len(seen):
        return True
    assert held.in_flight, f"{where}: consumed without the tool having asked"
    return False


def refresh(base: str, tool: Registered, token: str) -> httpx.Response:
    return http_calls.post(
        f"{base}/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": token},
        auth=(tool.client_id, tool.client_secret),
        timeout=60,
    )


def introspect(base: str, tool: Registered, token: str) -> bool:
    answer = http_calls.post(
        f"{base}/api/oauth/introspect",
        data={"token": token, "token_type_hint": "refresh_token"},
        auth=(tool.client_id, tool.client_secret),
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    active: bool = answer.json()["active"]
    return active


def grant_revoked(engine: Engine, held: Held) -> bool:
    with read_session(engine) as session:
        grant = session.get(Grant, held.grant_id)
        live_tokens = session.scalars(
            select(RefreshToken.id).where(
                RefreshToken.grant_id == held.grant_id, RefreshToken.revoked_at.is_(None)
            )
        ).all()
    assert grant is not None
    return grant.revoked_at is not None and not live_tokens


def check_through_api(
    deployment: Deployment, base: str, held: Held, live: bool, last_round: bool
) -> None:
    """The restarted server agrees with the database about the held token, and honours it."""
    tool = deployment.tool
    assert introspect(base, tool, held.refresh_token) is live
    if not live:
        # Its successor was issued and lost: presenting it is reuse, and the grant dies.
        answer = refresh(base, tool, held.refresh_token)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_grant"
        assert grant_revoked(deployment.engine, held)
        return
    answer = refresh(base, tool, held.refresh_token)  # still usable...
    assert answer.status_code == 200, answer.text
    spent = held.refresh_token
    held.refresh_token = answer.json()["refresh_token"]
    held.history.append(held.refresh_token)
    held.in_flight = False
    if last_round:  # ...once
        again = refresh(base, tool, spent)
        assert again.status_code == 400, again.text
        assert again.json()["error"] == "invalid_grant"
        assert grant_revoked(deployment.engine, held)


# --- when to kill ----------------------------------------------------------------------------


def in_flight(server: Server, load: RefreshLoad, engine: Engine, grants: list[Held]) -> bool:
    """Refreshes are under way: some answered already, several waiting for their answer."""
    if load.errors:
        return True  # stop here: the test fails on them
    return load.completed >= REFRESHES_BEFORE_KILL and load.in_flight(grants) >= IN_FLIGHT_AT_KILL


def committed_unanswered(engine: Engine, grants: list[Held]) -> list[Held]:
    """The grants whose held refresh token is consumed in the database while the tool still
    waits for the answer: the server committed the rotation and has not answered yet."""
    waiting = {token_key(h.refresh_token): h for h in grants if h.in_flight}
    if not waiting:
        return []
    with engine.connect() as connection:
        consumed = connection.execute(
            select(RefreshToken.token_hash).where(
                RefreshToken.token_hash.in_(list(waiting)), RefreshToken.consumed_at.is_not(None)
            )
        ).scalars()
        return [waiting[digest] for digest in consumed]


def caught_between_commit_and_answer(
    server: Server, load: RefreshLoad, engine: Engine, grants: list[Held]
) -> bool:
    """Freeze the server as soon as a rotation is committed and unanswered (see
    `freeze_between_commit_and_answer`)."""
    if load.errors:
        return True  # stop here: the test fails on them
    if load.completed < REFRESHES_BEFORE_KILL:
        return False
    return freeze_between_commit_and_answer(
        server, lambda: bool(committed_unanswered(engine, grants)), lambda: load.completed
    )


# Each kill is followed by a restart and the checks; the second lands where the answer of a
# committed rotation is lost with the server (the successor issued, the tool never told).
KILL_POINTS = {
    "refreshes in flight": in_flight,
    "a rotation committed, its answer not sent": caught_between_commit_and_answer,
}

# --- the test ---------------------------------------------------------------------------------


def test_a_killed_server_leaves_every_refresh_whole_or_undone(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    ledger = FaultLedger(request.node.nodeid, deployment.backend)
    server, engine = deployment.server, deployment.engine
    base = server.start()
    grants = [
        obtain_grant(engine, base, deployment.tool, deployment.user_id) for _ in range(GRANTS)
    ]
    for point, kill_point in KILL_POINTS.items():
        with RefreshLoad(base, deployment.tool, grants) as load:
            reached = partial(kill_point, server, load, engine, grants)
            wait_until(reached, 120, point, every=0.002)
            server.kill()
            waiting, completed = load.in_flight(grants), load.completed
        assert not load.errors, load.errors
        base = server.start()

        live = {held.grant_id: check_chain(engine, held) for held in grants}
        lost = sum(not alive for alive in live.values())
        ledger.inject(
            "kill -9 regdesk serve",
            during="refresh_token grants",
            point=point,
            completed_before_kill=completed,
            in_flight_at_kill=waiting,
            consumed_with_answer_lost=lost,
        )
        if point != "refreshes in flight":
            assert lost >= 1, "the kill was meant to land between a commit and its answer"
        last_round = point == list(KILL_POINTS)[-1]
        for held in grants:
            check_through_api(deployment, base, held, live[held.grant_id], last_round)
        grants = [held for held in grants if live[held.grant_id]]
    server.stop()
