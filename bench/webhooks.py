"""Webhooks under load (events.md; issue 18): how fast the outbox delivers, and what an event
costs the write that causes it.

- Delivery: EVENTS `user-updated` events written first (imports of BATCH new users, each one
  transaction, an endpoint subscribed to every event), then PROCESSES `regdesk serve` started
  together on the database, delivering to one fast receiver on loopback (`Receiver`: HTTP/1.1
  kept alive, answers 200 at once, checks nothing). Events per second from the first arrival
  to the last: SQLite with one process, PostgreSQL with one and with two.
- The write's cost: a user update through the service (`users.service.update_user` in a
  transaction of its own, as the admin area's edit page makes it), UPDATES of them with an
  endpoint subscribed (one event each) and as many without (the endpoint disabled: none),
  alternating in rounds of the same run; the mean of each and their ratio. No server runs
  meanwhile: the events wait in the outbox.

Both on SQLite, and on PostgreSQL when REGDESK_TEST_POSTGRES_URL is set (bench/http.py's
databases: BENCH_ONLY keeps one). The receiver and the event writer are the ones
tests/webhooks/test_two_processes.py counts with.
"""

from __future__ import annotations

import base64
import json
import os
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

import bench.http
from bench.http import REGDESK, databases, free_port, scratch_database, wait_healthy
from regdesk import documents
from regdesk.audit.service import Actor
from regdesk.db import make_engine, write_session
from regdesk.models import DOCUMENTS
from regdesk.oauth.applications import create_application
from regdesk.transfer.importer import import_document
from regdesk.users.models import User
from regdesk.users.service import update_user
from regdesk.webhooks import capture
from regdesk.webhooks.endpoints import add_endpoint, get_endpoint, set_enabled

EVENTS = int(os.environ.get("BENCH_WEBHOOK_EVENTS", "5000"))
BATCH = 1000  # new users per import: one transaction each
UPDATES = int(os.environ.get("BENCH_WEBHOOK_UPDATES", "300"))  # per mode, over ROUNDS
ROUNDS = 3
ACTOR = Actor("bench")


# --- a fast receiver -------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    webhook_id: str
    jti: str  # the JWT's id: the attempt's own (joined to the delivery log by it)
    issuer: str  # the JWT's `iss`: which server sent it (each its own address, unless set)
    status: int  # what the receiver answered
    at: float  # time.perf_counter() when it arrived


def jwt_claims(authorization: str) -> dict[str, Any]:
    """The claims of `Bearer <JWT>`, read without checking the signature (tests/webhooks checks
    it the way a receiver would; a counter only needs the `jti`)."""
    payload = authorization.removeprefix("Bearer ").split(".")[1]
    claims: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims


class Receiver:
    """An HTTP server on 127.0.0.1 that takes webhooks as fast as it can: HTTP/1.1 with the
    connection kept alive (one thread per sending connection), no Nagle delay, the answer
    written at once. `answer(webhook_id, times_seen_before)` chooses the status (200 unless
    told); every request is noted as an `Arrival`."""

    def __init__(self, answer: Callable[[str, int], int] | None = None) -> None:
        self.answer = answer or (lambda _webhook_id, _seen: 200)
        self.arrivals: list[Arrival] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else each answer waits on a delayed ACK (40 ms)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                status = receiver._arrived(
                    self.headers["webhook-id"], self.headers["Authorization"]
                )
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.block_on_close = False
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _arrived(self, webhook_id: str, authorization: str) -> int:
        claims = jwt_claims(authorization)
        with self._lock:
            status = self.answer(webhook_id, self._seen[webhook_id])
            self._seen[webhook_id] += 1
            self.arrivals.append(
                Arrival(webhook_id, claims["jti"], claims["iss"], status, time.perf_counter())
            )
        return status

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def delivered(self) -> int:
        """How many events were answered 2xx (each counted once)."""
        with self._lock:
            return len({a.webhook_id for a in self.arrivals if 200 <= a.status < 300})

    def wait_for(self, events: int, timeout: float) -> bool:
        """Whether `events` events were delivered within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.delivered() < events:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True


@contextmanager
def receiving(answer: Callable[[str, int], int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(answer)
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.stop()


# --- events written the real way -----------------------------------------------------------


def writing_events() -> None:
    """This process's writes write their events from now on (as `regdesk serve` and the
    command line set up at start)."""
    documents.install(DOCUMENTS)
    capture.install()


def subscribe(engine: Engine, url: str) -> int:
    """An application with an endpoint for every event at `url` (private targets allowed: the
    receiver is on loopback): the endpoint's id."""
    with write_session(engine) as session:
        application, _ = create_application(session, ACTOR, name="Webhook bench")
        return add_endpoint(session, ACTOR, application.id, url, allow_private=True).id


def write_events(engine: Engine, count: int, *, first: int = 0, batch: int = BATCH) -> None:
    """`count` new users, `batch` per import (one transaction each): one `user-updated` event
    each for every endpoint subscribed."""
    for start in range(first, first + count, batch):
        users = [
            {
                "username": f"hook{n}",
                "email": f"hook{n}@example.org",
                "firstName": "Fae",
                "lastName": f"Hook{n}",
            }
            for n in range(start, min(start + batch, first + count))
        ]
        import_document(engine, {"users": users}, actor=ACTOR, phone_region="US")


# --- servers ---------------------------------------------------------------------------------


def server_env(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "REGDESK_DATABASE_URL": database_url,
        "REGDESK_RATE_LIMITS": "off",
        "REGDESK_WEBHOOKS_ALLOW_PRIVATE": "on",
    }


@contextmanager
def servers(
    database_url: str, processes: int, log: Path | None = None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`processes` `regdesk serve` on the database, started together (each starts delivering
    as soon as it is up), healthy, stopped when the block ends; their output to `log`."""
    env = server_env(database_url)
    with ExitStack() as stack:
        output = stack.enter_context(open(log, "ab")) if log else subprocess.DEVNULL
        started = []
        for port in [free_port() for _ in range(processes)]:
            server = bench.http.start_server(
                [str(REGDESK), "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=output,
                stderr=output,
            )
            stack.callback(_stop, server)
            started.append((port, server))
        for port, server in started:
            wait_healthy(f"http://127.0.0.1:{port}", server)
        yield [server for _, server in started]


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=30)


# --- the benchmarks --------------------------------------------------------------------------


def delivery_rate(label: str, processes: int, events: int) -> dict[str, object]:
    """Events per second delivered by `processes` servers from a full outbox."""
    with scratch_database(label, "webhooks") as url, receiving() as receiver:
        subprocess.run(
            [str(REGDESK), "db", "upgrade"], env=server_env(url), check=True, capture_output=True
        )
        engine = make_engine(url)
        subscribe(engine, receiver.url)
        started = time.perf_counter()
        write_events(engine, events)
        write_seconds = time.perf_counter() - started
        engine.dispose()
        with servers(url, processes):
            if not receiver.wait_for(events, timeout=max(600.0, events / 5)):
                raise RuntimeError(f"{receiver.delivered()} of {events} events delivered")
        arrivals = sorted(a.at for a in receiver.arrivals)
    seconds = arrivals[-1] - arrivals[0]
    rate = round(events / seconds) if seconds > 0 else 0
    print(
        f"  {label:<10} {processes} process{'es' if processes > 1 else ''}: {events} events"
        f" delivered in {seconds:.1f} s, {rate} events/s (written in {write_seconds:.1f} s)",
        flush=True,
    )
    return {
        "events": events,
        "processes": processes,
        "seconds": round(seconds, 2),
        "events_per_second": rate,
        "write_seconds": round(write_seconds, 2),
    }


def write_cost(label: str, updates: int) -> dict[str, object]:
    """A user update's time with and without an endpoint subscribed, interleaved in rounds."""
    with scratch_database(label, "webhooks") as url:
        subprocess.run(
            [str(REGDESK), "db", "upgrade"], env=server_env(url), check=True, capture_output=True
        )
        engine = make_engine(url)
        write_events(engine, 100, batch=100)  # users to update (no endpoint yet: no event)
        endpoint_id = subscribe(engine, "http://127.0.0.1:9/hooks")  # never delivered here
        with write_session(engine) as session:
            user_ids = list(session.scalars(select(User.id).order_by(User.id)))
        timings: dict[bool, list[float]] = {True: [], False: []}
        per_round = max(1, updates // ROUNDS)
        edit = 0
        for _ in range(ROUNDS):
            for subscribed in (False, True):
                with write_session(engine) as session:
                    endpoint = get_endpoint(session, endpoint_id)
                    set_enabled(session, ACTOR, endpoint, subscribed)
                for _ in range(per_round):
                    edit += 1
                    user_id = user_ids[edit % len(user_ids)]
                    began = time.perf_counter()
                    with write_session(engine) as session:
                        user = session.get(User, user_id)
                        assert user is not None
                        update_user(session, ACTOR, user, {"firstName": f"Fae{edit}"}, "US")
                    timings[subscribed].append(time.perf_counter() - began)
        engine.dispose()
    without = statistics.mean(timings[False]) * 1000
    with_endpoint = statistics.mean(timings[True]) * 1000
    ratio = round(with_endpoint / without, 3)
    print(
        f"  {label:<10} user update (service, one transaction): {without:.2f} ms without an"
        f" endpoint, {with_endpoint:.2f} ms with one subscribed, ratio {ratio}",
        flush=True,
    )
    return {
        "updates_each": per_round * ROUNDS,
        "without_endpoint_ms": round(without, 3),
        "with_endpoint_ms": round(with_endpoint, 3),
        "ratio": ratio,
    }


def run() -> dict[str, object]:
    print(
        f"Webhooks: {EVENTS} events to a fast local receiver; a user update with and without"
        " an endpoint:",
        flush=True,
    )
    writing_events()
    results: dict[str, object] = {"events": EVENTS}
    for label in databases():
        counts = (1,) if label == "sqlite" else (1, 2)  # SQLite is one process's (README)
        results[label] = {
            "delivery": [delivery_rate(label, processes, EVENTS) for processes in counts],
            "write_cost": write_cost(label, UPDATES),
        }
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
