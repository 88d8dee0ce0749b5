"""`regdesk serve` as an organizer starts it: a real process, answering on a real port."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from regdesk.db import make_engine, read_session
from regdesk.db.instance import InstanceSetting
from regdesk.migrations.revisions import current_revision, head_revision
from tests import http_calls
from tests.helpers import live_server


@pytest.fixture
def server(database_url: str) -> Iterator[str]:
    with live_server(database_url) as base:
        yield base


def test_serve_migrates_then_answers(server: str, database_url: str) -> None:
    health = http_calls.get(f"{server}/healthz")
    assert health.json() == {"status": "ok"}
    home = http_calls.get(f"{server}/", follow_redirects=False)
    assert home.status_code == 200
    assert "text/html" in home.headers["content-type"]
    engine = make_engine(database_url)
    try:
        assert current_revision(engine) == head_revision()
        with read_session(engine) as session:
            keys = session.scalars(select(InstanceSetting.key)).all()
        assert keys == ["secret_key"]  # generated once, before the workers start
    finally:
        engine.dispose()


def test_an_idle_connection_is_closed_after_the_keep_alive_seconds(sqlite_url: str) -> None:
    """REGDESK_KEEP_ALIVE_SECONDS is the server's: an idle connection stays open until then
    (a proxy in front may reuse it), and is closed by the server after."""
    with live_server(sqlite_url, {"REGDESK_KEEP_ALIVE_SECONDS": "2"}) as base:
        port = int(base.rpartition(":")[2])
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            connection.settimeout(5)
            answer = b""
            while b'{"status":"ok"}' not in answer:
                answer += connection.recv(4096)
            answered = time.monotonic()
            connection.settimeout(1)
            with pytest.raises(TimeoutError):  # still open a second later
                connection.recv(1)
            connection.settimeout(5)
            assert connection.recv(1) == b""  # then closed by the server
            assert 1.5 < time.monotonic() - answered < 4.5
