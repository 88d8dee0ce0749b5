"""GET /readyz (migrations/readiness.py): 200 while the database answers and its schema is the
code's; 503, saying why, while PostgreSQL is unreachable (a real outage: the server reaches it
through a TCP forwarder the test stops and starts again) or the schema is behind the code."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from regdesk.db import make_engine
from regdesk.migrations.readiness import UNREACHABLE
from regdesk.migrations.revisions import head_revision
from regdesk.migrations.runner import alembic_config
from tests import http_calls
from tests.client import TestClient
from tests.conftest import bearer, postgres_base_url, scratch_database_url
from tests.faults.support import wait_until
from tests.helpers import free_port, live_server
from tests.observability.support import TOKEN, register, scrape, value


class Forwarder:
    """Forwards TCP connections on a loopback port to `target`, on an event loop of its own;
    `stop()` closes the port and cuts every connection through it, `start()` opens it again."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: asyncio.Server | None = None
        self.links: set[asyncio.StreamWriter] = set()

    def _run(self, work: object) -> None:
        asyncio.run_coroutine_threadsafe(work, self.loop).result(10)  # type: ignore[arg-type]

    def start(self) -> None:
        self._run(self._start())

    def stop(self) -> None:
        self._run(self._stop())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        for writer in list(self.links):
            writer.transport.abort()
        self.links.clear()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.links.update((writer, upstream))
        await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.transport.abort()


@pytest.fixture
def postgres_through_a_forwarder(tmp_path: Path) -> Iterator[tuple[str, Forwarder]]:
    """A migrated PostgreSQL database, and its URL through a forwarder the test controls."""
    if postgres_base_url() is None:
        pytest.skip("REGDESK_TEST_POSTGRES_URL is not set: PostgreSQL run skipped")
    with scratch_database_url("postgresql", tmp_path, migrated=True) as url:
        direct = make_url(url)
        forwarder = Forwarder(direct.host or "127.0.0.1", direct.port or 5432)
        forwarder.start()
        try:
            yield direct.set(port=forwarder.port).render_as_string(hide_password=False), forwarder
        finally:
            forwarder.close()


def test_readyz_is_503_while_postgresql_is_unreachable_and_200_after(
    postgres_through_a_forwarder: tuple[str, Forwarder],
) -> None:
    url, forwarder = postgres_through_a_forwarder
    engine = make_engine(url)
    tool = register(engine, service_scopes="user:read")
    engine.dispose()
    with live_server(url, {"REGDESK_METRICS_TOKEN": TOKEN}) as base:
        issued = http_calls.post(
            f"{base}/api/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(tool.client_id, tool.client_secret),
        )
        token = issued.json()["access_token"]
        assert http_calls.get(f"{base}/readyz").json() == {"status": "ok"}

        forwarder.stop()  # the database is away
        away = http_calls.get(f"{base}/readyz", timeout=30)
        assert away.status_code == 503
        assert away.json() == {"status": "unavailable", "reason": UNREACHABLE}
        assert http_calls.get(f"{base}/healthz", timeout=30).status_code == 503  # as it was
        assert http_calls.get(f"{base}/api/users/current", headers=bearer(token)).status_code == 503

        forwarder.start()  # and back
        wait_until(
            lambda: http_calls.get(f"{base}/readyz", timeout=30).status_code == 200,
            30,
            "ready again",
        )
        assert http_calls.get(f"{base}/readyz").json() == {"status": "ok"}
        samples = scrape(f"{base}/metrics", TOKEN)
        assert value(samples, "regdesk_database_errors_total", {"kind": "OperationalError"}) >= 1


def test_readyz_is_503_while_the_schema_is_behind_the_code(
    engine: Engine, client: TestClient
) -> None:
    assert client.get("/readyz").json() == {"status": "ok"}
    head = head_revision()
    assert head is not None
    script = ScriptDirectory.from_config(alembic_config())
    previous = script.get_revision(head).down_revision
    assert isinstance(previous, str)
    stamp = text("UPDATE alembic_version SET version_num = :revision")
    with engine.begin() as connection:  # as `alembic stamp` one revision down would
        connection.execute(stamp, {"revision": previous})
    try:
        behind = client.get("/readyz")
        assert behind.status_code == 503
        assert behind.json() == {
            "status": "unavailable",
            "reason": f"the database schema is at revision {previous}; this regdesk needs "
            f"{head}: run `regdesk db upgrade`",
        }
        assert client.get("/healthz").status_code == 200  # /healthz stays as it is
    finally:
        with engine.begin() as connection:
            connection.execute(stamp, {"revision": head})
    assert client.get("/readyz").status_code == 200
