"""What the webhook tests share: a real receiver on loopback that verifies each delivery as a
receiver written for the hosted service would (PyJWT, the PEM fetched from /api/webhooks/key),
an endpoint to send to, the events written, and a clock the tests move."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from sqlalchemy import Engine, select

from regdesk.audit.service import Actor
from regdesk.db import read_session, write_session
from regdesk.oauth.applications import create_application
from regdesk.outbox.models import OutboxMessage
from regdesk.outbox.service import deliver
from regdesk.webhooks.delivery import Sender
from regdesk.webhooks.endpoints import add_endpoint
from regdesk.webhooks.models import WebhookDelivery

ISSUER = "https://reg.example.org"
# How often a receiver's server looks whether it is to stop: `stop()` waits for that look,
# half a second with http.server's default, at every test's end.
SHUTDOWN_POLL = 0.01


@dataclass
class Received:
    """One request as the receiver got it: its headers, and its body's raw bytes."""

    headers: dict[str, str]
    body: bytes
    path: str

    @property
    def event(self) -> str:
        return str(json.loads(self.body)["event"])

    @property
    def data(self) -> dict[str, Any]:
        return dict(json.loads(self.body)["data"])


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 in a thread: records every POST and answers `answers` in
    turn (then 200). `hold()` keeps each request that comes next open, unanswered, until
    `release()` (a receiver slow to answer, or one whose sender dies meanwhile)."""

    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    answering: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.answering.set()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def start(self, port: int = 0) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                body = self.rfile.read(length)
                receiver.received.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body, self.path)
                )
                receiver.answering.wait()
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(f"answer {status}".encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = QuietServer(("127.0.0.1", port), Handler)
        threading.Thread(
            target=self.server.serve_forever, args=(SHUTDOWN_POLL,), daemon=True
        ).start()

    def hold(self) -> None:
        self.answering.clear()

    def release(self) -> None:
        self.answering.set()

    def stop(self) -> None:
        self.release()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def wait_for(self, count: int, seconds: float = 15.0) -> list[Received]:
        deadline = time.monotonic() + seconds
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) >= count, f"{len(self.received)} of {count} arrived"
        return self.received


class QuietServer(ThreadingHTTPServer):
    """A receiver's server: an answer its sender no longer waits for (killed meanwhile) is
    dropped without a traceback, and closing does not wait for a request held open."""

    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.start()
    yield found
    found.stop()


def verify(received: Received, pem: str, audience: str) -> dict[str, Any]:
    """What a receiver written for the hosted service checks: the JWT (RS256, against the
    published PEM, `aud` its own URL, not expired), and `int` against the raw body."""
    header = received.headers["authorization"]
    assert header.startswith("Bearer ")
    claims: dict[str, Any] = jwt.decode(
        header.removeprefix("Bearer "),
        pem,
        algorithms=["RS256"],
        audience=audience,
        options={"require": ["exp", "iat", "aud", "iss", "sub", "jti"]},
    )
    # The `data` member's bytes exactly as they stand in the body.
    raw = received.body
    start = raw.index(b',"data":') + len(b',"data":')
    assert raw.startswith(b'{"event":')
    assert raw.endswith(b"}")
    digest = base64.b64encode(hashlib.sha256(raw[start:-1]).digest()).decode()
    assert claims["int"] == digest, "the body is not the one signed"
    return claims


def application(engine: Engine, name: str = "Discord roles") -> int:
    with write_session(engine) as session:
        made, _ = create_application(session, Actor("test"), name=name)
        return made.id


def endpoint(engine: Engine, url: str, *events: str, client_id: int | None = None) -> int:
    client_id = client_id or application(engine)
    with write_session(engine) as session:
        return add_endpoint(session, Actor("test"), client_id, url, events, allow_private=True).id


def events_written(engine: Engine) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of every webhook message in the outbox, oldest first."""
    with read_session(engine) as session:
        payloads = session.scalars(
            select(OutboxMessage.payload)
            .where(OutboxMessage.channel == "webhook")
            .order_by(OutboxMessage.id)
        )
        return [(p["event"], json.loads(p["body"])["data"]) for p in payloads]


def deliveries(engine: Engine) -> list[WebhookDelivery]:
    with read_session(engine) as session:
        return list(session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))


def logged(engine: Engine, count: int, seconds: float = 15.0) -> list[WebhookDelivery]:
    """The delivery log once it holds `count` attempts: a sender logs an attempt after the
    receiver's answer, so a request that arrived may not be logged yet."""
    deadline = time.monotonic() + seconds
    while len(found := deliveries(engine)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(found) >= count, f"{len(found)} of {count} attempts logged"
    return found


class Clock:
    """utcnow() as the outbox and the webhooks read it, moved by the test (no sleeping)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A minute ahead: what the test writes next (its times from the real clock, however
        # slow a loaded machine is) is due.
        self.now = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
        for module in (
            "regdesk.outbox.service",
            "regdesk.webhooks.delivery",
            "regdesk.webhooks.endpoints",
        ):
            monkeypatch.setattr(f"{module}.utcnow", lambda: self.now)

    def advance(self, by: dt.timedelta) -> None:
        self.now += by


@contextmanager
def stopped(receiver: Receiver) -> Iterator[None]:
    """The receiver down (its port refuses connections), then up again on the same port."""
    assert receiver.server is not None
    port = receiver.server.server_address[1]
    receiver.stop()
    yield
    receiver.start(port)


def fail_for_three_days(engine: Engine, receiver: Receiver, clock: Clock) -> None:
    """The receiver answers 503 to every attempt of the outbox's one webhook message until it is
    given up (events.md: retried for at least 3 days, the clock moved to each retry): its
    endpoint is then disabled, unless a delivery to it succeeded meanwhile."""
    receiver.answers = [503] * 100
    sender = Sender(engine, issuer=ISSUER, allow_private=True)
    try:
        for _ in range(30):
            if deliver(engine, sender.channel()).failed:
                return
            with read_session(engine) as session:
                due = session.scalars(
                    select(OutboxMessage.due_at).where(OutboxMessage.status == "pending")
                ).one()
            clock.advance(due - clock.now)
        raise AssertionError("the message was still retried after 30 attempts")
    finally:
        sender.close()
        receiver.answers = []
