"""A backup taken while the service writes holds every write committed before it began: one
snapshot, restorable, taken without stopping the writers."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from regdesk.audit.models import AuditEvent
from regdesk.audit.service import Actor
from regdesk.backups import back_up, restore
from regdesk.db import make_engine, write_session
from regdesk.oauth.applications import create_application
from regdesk.oauth.models import AccessToken
from regdesk.oauth.tokens import token_key
from regdesk.users.models import User
from regdesk.users.service import NewUser, create_user
from tests import http_calls
from tests.backups.support import database_of_its_own
from tests.conftest import BACKENDS
from tests.helpers import live_server


@dataclass(frozen=True)
class Write:
    kind: str  # "token" (the live server's) or "user" (this process's)
    key: str  # the token's hash, or the username
    sent: float  # time.monotonic() as it was asked for
    committed: float  # as its commit was acknowledged


class Load:
    """Writers that go on until stopped: two clients asking the live server for tokens (one
    INSERT each, the server's), and this process creating users (a user and its audit event,
    one transaction). Each write is kept with when it was asked for and acknowledged."""

    def __init__(self, database_url: str, server: str) -> None:
        self.database_url = database_url
        self.server = server
        self.writes: list[Write] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        engine = make_engine(database_url)
        with write_session(engine) as session:
            application, secret = create_application(
                session, Actor("test"), name="Load", service_scopes="user:read"
            )
        engine.dispose()
        self._credentials = (str(application.id), secret)
        self._threads = [
            threading.Thread(target=self._run, args=(self._tokens,)),
            threading.Thread(target=self._run, args=(self._tokens,)),
            threading.Thread(target=self._run, args=(self._users,)),
        ]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        assert not self._errors, self._errors

    def count(self) -> int:
        with self._lock:
            return len(self.writes)

    def wait_for(self, more: int) -> None:
        goal = self.count() + more
        deadline = time.monotonic() + 60
        while self.count() < goal:
            assert not self._errors, self._errors
            assert time.monotonic() < deadline, "the writers stalled"
            time.sleep(0.01)

    def _run(self, writer: Callable[[], None]) -> None:
        try:
            writer()
        except BaseException as exc:  # the test fails on it, in the main thread
            self._errors.append(exc)

    def _keep(self, write: Write) -> None:
        with self._lock:
            self.writes.append(write)

    def _tokens(self) -> None:
        with http_calls.client(base_url=self.server, auth=self._credentials) as client:
            while not self._stop.is_set():
                sent = time.monotonic()
                response = client.post(
                    "/api/oauth/token", data={"grant_type": "client_credentials"}
                )
                assert response.status_code == 200, response.text
                hashed = token_key(response.json()["access_token"])
                self._keep(Write("token", hashed, sent, time.monotonic()))

    def _users(self) -> None:
        engine = make_engine(self.database_url)
        number = 0
        try:
            while not self._stop.is_set():
                number += 1
                username = f"load{number}"
                sent = time.monotonic()
                with write_session(engine) as session:
                    create_user(
                        session,
                        Actor("test"),
                        NewUser(username, f"{username}@example.org", "Load", f"N{number}"),
                    )
                self._keep(Write("user", username, sent, time.monotonic()))
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backup_under_write_load_holds_every_write_committed_before_it_began(
    backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "regdesk.backup"
    steps: list[float] = []

    def slowly(remaining: int, total: int) -> None:
        # SQLite copies a step at a time: stretched here, so that writes land between steps.
        steps.append(time.monotonic())
        # A copy that starts again whenever someone writes would never end under this load.
        assert len(steps) < 500, "the copy keeps starting again"
        time.sleep(0.02)

    with database_of_its_own(backend, tmp_path, migrated=True) as source:
        with (
            live_server(source, {"REGDESK_RATE_LIMITS": "off"}) as server,
            Load(source, server) as load,
        ):
            load.wait_for(150)
            began = time.monotonic()
            made = back_up(source, file, progress=slowly, step_pages=8)
            ended = time.monotonic()
            load.wait_for(30)
        writes = list(load.writes)
        with database_of_its_own(backend, tmp_path) as target:
            restore(target, file)
            found = _restored(target)

    before = [w for w in writes if w.committed < began]
    assert len(before) >= 150
    missing = [w for w in before if w.key not in found[w.kind]]
    assert missing == [], f"{len(missing)} of {len(before)} writes committed before are lost"
    # One snapshot, as the backup began: nothing asked for after it was taken is in it (SQLite
    # pins it before its first step; pg_dump takes it as it starts).
    taken_by = steps[0] if backend == "sqlite" else ended
    after = [w for w in writes if w.sent > taken_by]
    assert after, "the writers went on while the backup was made"
    assert [w for w in after if w.key in found[w.kind]] == []
    if backend == "sqlite":
        assert len(steps) > 10, "SQLite copied in steps"
        during = [w for w in writes if began < w.committed < ended]
        assert during, "writers committed between the steps of the copy"
    assert made.revision == found["revision"].pop()


def _restored(database_url: str) -> dict[str, set[str]]:
    """What the restored database holds, after checking it is whole: SQLite's integrity check,
    and every user with its audit event (written in one transaction, so in one snapshot)."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        with sqlite3.connect(str(url.database)) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            tokens = set(connection.scalars(select(AccessToken.token_hash)))
            users = {
                row.username: row.id for row in connection.execute(select(User.username, User.id))
            }
            created = set(
                connection.scalars(
                    select(AuditEvent.target_id).where(AuditEvent.action == "user.created")
                )
            )
            revision = connection.exec_driver_sql("SELECT version_num FROM alembic_version")
            revisions = {str(r) for r in revision.scalars()}
    finally:
        engine.dispose()
    assert {str(i) for i in users.values()} <= created, "a user without its audit event"
    return {"token": tokens, "user": set(users), "revision": revisions}
