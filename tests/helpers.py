"""Small helpers shared by tests: looking into the database as a whole, and live servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
import pytest
import redis
from sqlalchemy import Engine, MetaData, Table, func, inspect, select
from sqlalchemy.engine import make_url

from regdesk.models import metadata
from tests import forkserver, http_calls


def every_table(engine: Engine) -> list[Table]:
    """The tables the database holds: the models' (regdesk.models), in dependency order, and any
    other (Alembic's version table) as it is there. Reflecting the whole database instead took
    a twentieth of the page tests' time. The models' tables are the database's: the migrations
    are held to them (tests/migrations/test_migrations.py)."""
    present = set(inspect(engine).get_table_names())
    known = [table for table in metadata.sorted_tables if table.name in present]
    others = MetaData()
    for name in sorted(present - {table.name for table in known}):
        Table(name, others, autoload_with=engine)
    return known + list(others.sorted_tables)


def database_text(engine: Engine) -> str:
    """Every row of every table, as text: for asserting that a secret is nowhere in it."""
    parts: list[str] = []
    tables = every_table(engine)
    with engine.connect() as connection:
        for table in tables:
            parts.extend(repr(tuple(row)) for row in connection.execute(select(table)))
    url = make_url(engine.url)
    if url.get_backend_name() == "sqlite" and url.database:
        # The raw file and its write-ahead log too, in case a page kept an old value.
        for suffix in ("", "-wal"):
            path = Path(url.database + suffix)
            if path.exists():
                parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def row_counts(engine: Engine) -> dict[str, int]:
    tables = every_table(engine)
    with engine.connect() as connection:
        return {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in tables
        }


# The ports the tests' servers listen on are chosen below the range the system takes its
# outgoing connections' ports from (net.ipv4.ip_local_port_range): a port found free there
# could be taken by a connection to PostgreSQL or Redis before the server binds it ("address
# already in use", seen in CI). Each test process draws from a slice of its own, in turn, so
# that two processes never pick the same port at the same moment either.
PORTS_FROM = 10_000
SLICES = 8


def _outgoing_ports_from() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    number = int(worker) if worker.isdigit() else 0
    top = _outgoing_ports_from()
    size = (top - PORTS_FROM) // SLICES
    start = PORTS_FROM + (number % SLICES) * size
    return range(start, start + size)


_next_port: list[int] = []


def free_port() -> int:
    """A port no one listens on, on every address, outside the outgoing connections' range."""
    ports = _slice()
    if not _next_port:
        _next_port.append(ports.start + os.getpid() % len(ports))
    for _ in range(len(ports)):
        port = _next_port[0]
        _next_port[0] = ports.start + (port + 1 - ports.start) % len(ports)
        with socket.socket() as probe:
            try:
                probe.bind(("0.0.0.0", port))  # noqa: S104 (a probe, closed at once)
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


@contextmanager
def live_server(
    database_url: str,
    settings: Mapping[str, str] | None = None,
    *,
    stdout: IO[bytes] | None = None,
    port: int | None = None,
) -> Iterator[str]:
    """`regdesk serve` from the installed console script, on a free loopback port.

    `settings`: more environment for it, e.g. `{"REGDESK_REDIS_URL": ...}`; `stdout`: where its
    access log goes (nowhere by default); `port`: this one (free_port()) rather than any, for a
    REGDESK_PUBLIC_URL that names it.
    """
    with live_server_process(database_url, settings, stdout=stdout, port=port) as (base, _):
        yield base


@contextmanager
def live_servers(
    database_url: str, count: int, settings: Mapping[str, str] | None = None
) -> Iterator[list[str]]:
    """`count` servers on one database, started at the same time (each start is mostly
    Python importing the service, which the machine's cores do side by side)."""
    processes = [_spawn(database_url, settings, None, free_port()) for _ in range(count)]
    try:
        for process, base in processes:
            _wait_until_healthy(process, base)
        yield [base for _, base in processes]
    finally:
        for process, _ in processes:
            _stop(process)


@contextmanager
def live_server_process(
    database_url: str,
    settings: Mapping[str, str] | None = None,
    *,
    stdout: IO[bytes] | None = None,
    port: int | None = None,
    arguments: Sequence[str] = (),
    stderr: IO[bytes] | None = None,
) -> Iterator[tuple[str, int]]:
    """`live_server`, and the server's process id (to watch its memory in /proc); `arguments`:
    more for `regdesk serve` (`--workers 2`); `stderr`: where its own log goes."""
    process, base = _spawn(database_url, settings, stdout, port or free_port(), arguments, stderr)
    try:
        _wait_until_healthy(process, base)
        yield base, process.pid
    finally:
        _stop(process)


def _spawn(
    database_url: str,
    settings: Mapping[str, str] | None,
    stdout: IO[bytes] | None,
    port: int,
    arguments: Sequence[str] = (),
    stderr: IO[bytes] | None = None,
) -> tuple[forkserver.Process, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env.update(settings or {})
    env["REGDESK_DATABASE_URL"] = database_url
    regdesk = Path(sys.executable).with_name("regdesk")
    process = forkserver.popen(
        [str(regdesk), "serve", "--host", "127.0.0.1", "--port", str(port), *arguments],
        env=env,
        stdout=subprocess.DEVNULL if stdout is None else stdout,
        stderr=subprocess.PIPE if stderr is None else stderr,
    )
    return process, f"http://127.0.0.1:{port}"


def _wait_until_healthy(process: forkserver.Process, base: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        try:
            if http_calls.get(f"{base}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server did not become healthy in 30 s"
        time.sleep(0.05)


def _stop(process: forkserver.Process) -> None:
    process.terminate()
    process.wait(timeout=10)


REDIS_ENV = "REGDESK_TEST_REDIS_URL"


def shared_redis_url() -> str:
    """The Redis that rate-limit counters and several workers share in tests (.ci/run starts
    one); the test is skipped, saying so, on a machine without one."""
    url = os.environ.get(REDIS_ENV, "redis://127.0.0.1:6379/15")
    probe = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        probe.ping()
    except redis.RedisError as error:
        pytest.skip(f"no Redis at {url} ({error}): start one (.ci/run does) or set {REDIS_ENV}")
    finally:
        probe.close()
    return url
