"""On SQLite, requests take turns to write (deps._write_turn): a request's write session opens
only once the one before it has committed, and while it waits for its turn it holds no worker
thread, so the writer before it always has one to finish in. A sign-in checks its password
before its turn comes, so that argon2 does not hold up every other writer."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi import FastAPI

from regdesk.accounts import pages
from regdesk.accounts.passwords import password_matches
from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.deps import WriteSession
from regdesk.users.models import User
from tests.client import TestClient
from tests.conftest import PUBLIC_URL, migrated_sqlite_url
from tests.web.support import PASSWORD, form, make_user

WAITING = 0.3  # seconds the second request is given to start writing, if it could


def _app(tmp_path: Path) -> FastAPI:
    url = migrated_sqlite_url(tmp_path / "regdesk.sqlite3")
    return create_app(load_settings(database_url=url, public_url=PUBLIC_URL))


def test_a_second_writer_waits_for_its_turn_without_a_thread(tmp_path: Path) -> None:
    app = _app(tmp_path)
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


def test_a_sign_in_checks_the_password_while_another_request_has_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(tmp_path)
    make_user(app.state.engine, "fox")
    holding, release = threading.Event(), threading.Event()
    checked_while_held: list[bool] = []

    @app.post("/holding")
    def hold(db: WriteSession) -> dict[str, Any]:
        holding.set()
        assert release.wait(timeout=30)
        return {}

    def matches(user: User | None, password: str) -> bool:
        checked_while_held.append(holding.is_set() and not release.is_set())
        return password_matches(user, password)

    monkeypatch.setattr(pages, "password_matches", matches)
    with TestClient(app, base_url="https://testserver") as client, ThreadPoolExecutor(2) as pool:
        page = client.get("/login")
        fields = {**form(page.text, "/login").fields, "username": "fox", "password": PASSWORD}
        held = pool.submit(client.post, "/holding")
        assert holding.wait(timeout=30)
        signing_in = pool.submit(client.post, "/login", data=fields, follow_redirects=False)
        deadline = time.monotonic() + 30
        while not checked_while_held and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checked_while_held == [True]  # checked while the other held the turn
        release.set()
        assert held.result(timeout=30).status_code == 200
        assert signing_in.result(timeout=30).status_code == 303  # then signed in, in turn
