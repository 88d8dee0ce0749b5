"""`regdesk serve` as an organizer starts it: a real process, answering on a real port."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select

from regdesk.db import make_engine, read_session
from regdesk.db.instance import InstanceSetting
from regdesk.migrations.runner import current_revision, head_revision
from tests.helpers import live_server


@pytest.fixture
def server(database_url: str) -> Iterator[str]:
    with live_server(database_url) as base:
        yield base


def test_serve_migrates_then_answers(server: str, database_url: str) -> None:
    health = httpx.get(f"{server}/healthz")
    assert health.json() == {"status": "ok"}
    home = httpx.get(f"{server}/", follow_redirects=False)
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
