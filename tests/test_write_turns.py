"""On SQLite, requests take turns to write (deps._write_turn): a request's write session opens
only once the one before it has committed, and while it waits for its turn it holds no worker
thread, so the writer before it always has one to finish in."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi.testclient import TestClient

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.deps import WriteSession
from tests.conftest import PUBLIC_URL, migrated_sqlite_url

WAITING = 0.3  # seconds the second request is given to start writing, if it could


def test_a_second_writer_waits_for_its_turn_without_a_thread(tmp_path: Path) -> None:
    app = create_app(
        load_settings(
            database_url=migrated_sqlite_url(tmp_path / "regdesk.sqlite3"), public_url=PUBLIC_URL
        )
    )
    inside: list[int] = []  # requests whose write session is open, in order
    first_inside, release = threading.Event(), threading.Event()

    @app.post("/writing")
    def writing(db: WriteSession) -> dict[str, Any]:
        inside.append(len(inside))
        first_inside.set()
        assert release.wait(timeout=30)
        return {}

    threads_in_use: list[float] = []

    @app.get("/threads-in-use")
    async def threads() -> dict[str, Any]:
        threads_in_use.append(anyio.to_thread.current_default_thread_limiter().borrowed_tokens)
        return {}

    with TestClient(app, base_url="https://testserver") as client, ThreadPoolExecutor(2) as pool:
        first = pool.submit(client.post, "/writing")
        assert first_inside.wait(timeout=30)
        second = pool.submit(client.post, "/writing")
        time.sleep(WAITING)
        client.get("/threads-in-use")
        assert inside == [0]  # the second has not begun to write
        assert threads_in_use == [1]  # and holds no thread: only the first's endpoint has one
        release.set()
        assert first.result(timeout=30).status_code == 200
        assert second.result(timeout=30).status_code == 200
    assert inside == [0, 1]
