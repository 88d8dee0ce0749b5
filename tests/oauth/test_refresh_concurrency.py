"""Refresh rotation is one atomic step: of concurrent refreshes with one token, exactly one
wins, whichever server process each reaches (decisions.md, Tokens; issue 4)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from regdesk.db import make_engine
from tests import http_calls
from tests.client import TestClient
from tests.conftest import Apps, postgres_base_url, scratch_database_url
from tests.helpers import live_servers
from tests.oauth.user_flow import Flow, make_flow

ROUNDS = 12


def race(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    """Run the calls at the same moment, one thread each."""
    barrier = threading.Barrier(len(calls))
    answers: list[httpx.Response | None] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        answers[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert all(a is not None for a in answers)
    return answers  # type: ignore[return-value]


def outcome(answers: list[httpx.Response]) -> list[int]:
    return sorted(a.status_code for a in answers)


@pytest.fixture
def postgres_engine(tmp_path: Path) -> Iterator[Engine]:
    if postgres_base_url() is None:
        pytest.skip("REGDESK_TEST_POSTGRES_URL is not set: PostgreSQL run skipped")
    with scratch_database_url("postgresql", tmp_path, migrated=True) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


def test_two_server_processes_on_postgresql_one_winner_per_token(
    postgres_engine: Engine,
) -> None:
    url = postgres_engine.url.render_as_string(hide_password=False)
    with live_servers(url, 2) as (first, second):
        # The test's own app only issues codes (approve) and stores tokens; every refresh goes
        # to the two real server processes.
        from regdesk.app import create_app
        from regdesk.config import load_settings

        app = create_app(load_settings(database_url=url))
        with TestClient(app, base_url="https://testserver") as client:
            flow = make_flow(client, Apps(postgres_engine, client), postgres_engine)
            for _ in range(ROUNDS):
                refresh_token = flow.tokens()["refresh_token"]
                form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
                auth = (flow.app.client_id, flow.app.client_secret)
                answers = race(
                    [
                        partial(http_calls.post, f"{base}/api/oauth/token", data=form, auth=auth)
                        for base in (first, second)
                    ]
                )
                assert outcome(answers) == [200, 400], [a.text for a in answers]
                loser = next(a for a in answers if a.status_code == 400)
                assert loser.json()["error"] == "invalid_grant"


def test_concurrent_refreshes_in_one_process(flow_fixture: Flow) -> None:
    flow = flow_fixture
    for _ in range(ROUNDS):
        refresh_token = flow.tokens()["refresh_token"]
        answers = race([partial(flow.refresh, refresh_token) for _ in range(4)])
        assert outcome(answers) == [200, 400, 400, 400], [a.text for a in answers]


@pytest.fixture
def flow_fixture(client: TestClient, apps: Apps, engine: Engine) -> Flow:
    return make_flow(client, apps, engine)
