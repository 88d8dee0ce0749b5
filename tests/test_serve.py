"""`regdesk serve` as an organizer starts it: a real process, answering on a real port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from regdesk.db import InstanceSetting, make_engine, read_session
from regdesk.migrations.runner import current_revision, head_revision


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(database_url: str) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env["REGDESK_DATABASE_URL"] = database_url
    regdesk = Path(sys.executable).with_name("regdesk")  # the installed console script
    process = subprocess.Popen(
        [str(regdesk), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not become healthy in 30 s"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


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
