"""kill -9 of `regdesk serve` around webhook deliveries, and a receiver down for a while
(events.md, Delivery: "A crash or restart at any moment delays a delivery, never drops it";
issue 18). Each event is written in the transaction of its change, then sent by the server's
outbox: a due message is claimed for a lease (regdesk.outbox: LEASE, 5 minutes), sent, then
marked sent or given its next attempt.

The changes are made through the live server, as an organizer makes them (the admin area's
edit page, signed in): the server commits them with their events and its delivery thread is
woken at once. The receiver (tests/webhooks/support.py) verifies what arrives the way a
receiver written for the hosted service would, against the PEM the server publishes. Where a
kill is meant to land is made certain, not timed: the receiver holds a request open, so the
server's one delivery thread is inside a send when it dies.

Time the outbox waits for (a dead process's lease, the retries' backoff) is made to pass by
moving the due times of the waiting messages back by it, the database's clock driven as
tests/webhooks drives the in-process one: the restarted server then finds them due at its next
poll, never after minutes of sleep. The servers here poll every POLL seconds
(REGDESK_OUTBOX_POLL_SECONDS) rather than the 5 s a deployment does: the same look at the
outbox, only made sooner, so that each turn of time waits a moment rather than 5 s.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from sqlalchemy import Engine, select, update

from regdesk import documents
from regdesk.db import make_engine, read_session, utcnow, write_session
from regdesk.models import DOCUMENTS
from regdesk.outbox.models import OutboxMessage, OutboxStatus
from regdesk.outbox.service import LEASE
from regdesk.webhooks import capture
from regdesk.webhooks.models import WebhookDelivery
from tests import http_calls
from tests.conftest import scratch_database_url
from tests.faults.support import BACKENDS, FaultLedger, Server, wait_until
from tests.oauth.test_code_flow_client_library import form_with, page_forms
from tests.web.support import PASSWORD, make_user
from tests.webhooks.support import Received, Receiver, endpoint, stopped, verify

PEOPLE = ("ann", "bob", "cat", "dan")
POLL = 0.2  # seconds: how often the servers here look for what became due
TURN = 3 * POLL  # after time passes: a poll, and the sends it finds due
DELIVERED_WITHIN = 30.0  # seconds: a server's start and a poll or two, on a loaded machine


@dataclass
class Deployment:
    backend: str
    engine: Engine
    server: Server
    receiver: Receiver
    users: dict[str, int]


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    """A database with an organizer and the people they edit, an endpoint subscribed to every
    event at a live receiver, and a `regdesk serve` to start and kill on it."""
    documents.install(DOCUMENTS)  # what this process writes writes its events too
    capture.install()
    receiver = Receiver()
    receiver.start()
    with scratch_database_url(request.param, tmp_path, migrated=True) as url:
        engine = make_engine(url)
        users = {name: make_user(engine, name, password=None) for name in PEOPLE}
        make_user(engine, "boss", permissions=["admin"])
        endpoint(engine, receiver.url)
        server = Server(
            url,
            tmp_path / "serve.log",
            {"REGDESK_WEBHOOKS_ALLOW_PRIVATE": "on", "REGDESK_OUTBOX_POLL_SECONDS": str(POLL)},
        )
        try:
            yield Deployment(request.param, engine, server, receiver, users)
        finally:
            server.stop()
            receiver.stop()
            engine.dispose()


# --- changes through the live server --------------------------------------------------------


def sign_in(base: str, username: str) -> httpx.Client:
    browser = http_calls.client(base_url=base, timeout=60)
    page = browser.get("/login")
    fields = form_with(page_forms(page.text), "password")
    fields.pop("__action__")
    fields.update(username=username, password=PASSWORD)
    assert browser.post("/login", data=fields).status_code == 303
    return browser


def rename(browser: httpx.Client, user_id: int, first_name: str) -> None:
    """The organizer saves the user's profile with a new first name: one `user-updated`."""
    page = browser.get(f"/admin/users/{user_id}/edit")
    assert page.status_code == 200, page.text
    fields = form_with(page_forms(page.text), "firstName")
    action = urljoin(str(page.url), fields.pop("__action__"))
    fields["firstName"] = first_name
    saved = browser.post(action, data=fields)
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"].endswith("?done=saved")


# --- the outbox, seen from the database -------------------------------------------------------


@dataclass(frozen=True)
class Message:
    id: int
    webhook_id: str
    body: str
    status: str
    attempts: int
    due_at: dt.datetime


def outbox(engine: Engine) -> list[Message]:
    with read_session(engine) as session:
        rows = session.scalars(
            select(OutboxMessage)
            .where(OutboxMessage.channel == capture.CHANNEL)
            .order_by(OutboxMessage.id)
        )
        return [
            Message(
                row.id,
                row.payload["webhookId"],
                row.payload["body"],
                row.status,
                row.attempts,
                row.due_at,
            )
            for row in rows
        ]


def logged(engine: Engine) -> Counter[int]:
    """The attempts in the delivery log, per outbox message."""
    with read_session(engine) as session:
        return Counter(session.scalars(select(WebhookDelivery.message_id)))


def log_of(engine: Engine, message_id: int) -> list[tuple[int, int | None]]:
    """(attempt, status code) of each logged attempt of a message, in order."""
    with read_session(engine) as session:
        return [
            (attempt, status)
            for attempt, status in session.execute(
                select(WebhookDelivery.attempt, WebhookDelivery.status_code)
                .where(WebhookDelivery.message_id == message_id)
                .order_by(WebhookDelivery.id)
            )
        ]


def time_passes(engine: Engine, by: dt.timedelta) -> None:
    """`by` passes for the outbox: every waiting message falls due that much sooner (a claim's
    lease runs out, a retry's backoff ends)."""
    with write_session(engine) as session:
        for message_id, due_at in session.execute(
            select(OutboxMessage.id, OutboxMessage.due_at).where(
                OutboxMessage.status == OutboxStatus.PENDING.value
            )
        ):
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.id == message_id)
                .values(due_at=due_at - by)
            )


def until_all_due(engine: Engine) -> dt.timedelta:
    """How long until every waiting message is due (the longest backoff among them)."""
    waiting = [m.due_at for m in outbox(engine) if m.status == OutboxStatus.PENDING.value]
    return max(max(waiting) - utcnow(), dt.timedelta(0)) + dt.timedelta(seconds=1)


def all_sent(engine: Engine) -> bool:
    return all(m.status == OutboxStatus.SENT.value for m in outbox(engine))


def time_passes_until_all_sent(engine: Engine) -> None:
    """Time passes, a retry's wait at a time, until every event is delivered: each turn moves
    every waiting message to its due time (again, should a failure be recorded just after the
    last move), then gives the server a moment to send them."""

    def sent_after_a_turn() -> bool:
        if all_sent(engine):
            return True
        time_passes(engine, until_all_due(engine))
        return False

    wait_until(sent_after_a_turn, DELIVERED_WITHIN, "every event to be delivered", every=TURN)


def checked(received: list[Received], base: str, url: str) -> list[dict[str, Any]]:
    """Every delivery verified as the receiver would: the JWT against the published PEM."""
    pem = http_calls.get(f"{base}/api/webhooks/key", timeout=30).text
    return [verify(delivery, pem, url) for delivery in received]


def by_webhook_id(received: list[Received]) -> dict[str, list[Received]]:
    found: dict[str, list[Received]] = {}
    for delivery in received:
        found.setdefault(delivery.headers["webhook-id"], []).append(delivery)
    return found


# --- the tests --------------------------------------------------------------------------------


def test_an_event_committed_before_a_kill_is_delivered_after_the_restart(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    """The server commits changes with their events and dies before sending them (its delivery
    thread is busy with an earlier event, held open by the receiver): the restarted server
    sends them at once, each with the webhook-id it was written with, and nothing is lost."""
    ledger = FaultLedger(request.node.nodeid, deployment.backend)
    engine, server, receiver, users = (
        deployment.engine,
        deployment.server,
        deployment.receiver,
        deployment.users,
    )
    organizer = sign_in(server.start(), "boss")
    receiver.hold()
    rename(organizer, users["ann"], "Annie")
    receiver.wait_for(1)  # the delivery thread is inside ann's send, the receiver silent
    rename(organizer, users["bob"], "Bobby")
    rename(organizer, users["cat"], "Cathy")
    committed = [m for m in outbox(engine) if m.attempts == 0]
    assert len(committed) == 2, "bob's and cat's events were to be committed and not yet tried"
    server.kill()
    ledger.inject(
        "kill -9 regdesk serve",
        during="webhook delivery",
        point="events committed, not yet sent",
        committed_unsent=len(committed),
    )
    receiver.release()
    base = server.start()

    arrived = receiver.wait_for(3, DELIVERED_WITHIN)[1:]  # never claimed: due at once
    assert {d.headers["webhook-id"]: d.body for d in arrived} == {
        m.webhook_id: m.body.encode() for m in committed
    }
    assert sorted(d.data["user"]["firstName"] for d in arrived) == ["Bobby", "Cathy"]
    checked(arrived, base, receiver.url)

    # Nothing lost: ann's, cut by the kill, goes once the dead process's claim runs out.
    time_passes(engine, LEASE)
    wait_until(lambda: all_sent(engine), DELIVERED_WITHIN, "every event to be delivered")
    assert set(by_webhook_id(receiver.received)) == {m.webhook_id for m in outbox(engine)}
    checked(receiver.received[3:], base, receiver.url)


def test_a_delivery_cut_by_a_kill_is_sent_again_with_its_webhook_id(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    """The server dies while the receiver has the request open and has not answered: the
    event stays claimed by the dead process until the lease runs out, then the restarted
    server sends it again, same webhook-id, same body, as a new attempt (at least once: a
    receiver drops the duplicate by its webhook-id)."""
    ledger = FaultLedger(request.node.nodeid, deployment.backend)
    engine, server, receiver = deployment.engine, deployment.server, deployment.receiver
    base = server.start()
    organizer = sign_in(base, "boss")
    receiver.hold()
    rename(organizer, deployment.users["ann"], "Annie")
    [cut] = receiver.wait_for(1)
    [first] = checked([cut], base, receiver.url)
    [message] = outbox(engine)
    assert (message.status, message.attempts) == ("pending", 1)
    server.kill()
    ledger.inject(
        "kill -9 regdesk serve", during="webhook delivery", point="a request open, unanswered"
    )
    receiver.release()
    base = server.start()

    [waiting] = outbox(engine)  # kept for the dead process's lease: neither lost nor resent
    assert (waiting.status, waiting.attempts) == ("pending", 1)
    assert waiting.due_at > utcnow() + LEASE - dt.timedelta(minutes=1)
    assert len(receiver.received) == 1
    time_passes(engine, LEASE)
    _, again = receiver.wait_for(2, DELIVERED_WITHIN)
    assert again.headers["webhook-id"] == cut.headers["webhook-id"] == message.webhook_id
    assert again.body == cut.body == message.body.encode()
    [second] = checked([again], base, receiver.url)
    assert first["jti"] != second["jti"]  # an attempt of its own
    wait_until(lambda: all_sent(engine), DELIVERED_WITHIN, "the event to be marked sent")
    # The cut attempt died before its answer could be logged; the second is attempt 2.
    assert log_of(engine, message.id) == [(2, 200)]
    assert len(receiver.received) == 2


def test_a_receiver_down_for_a_while_gets_every_event_when_it_comes_back(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    """The receiver refuses connections through the retries at about 5 s, 5 min and 30 min,
    and the server is killed and restarted meanwhile: when the receiver is back, the next
    retry brings it every event, each once, with the webhook-id it was written with."""
    ledger = FaultLedger(request.node.nodeid, deployment.backend)
    engine, server, receiver, users = (
        deployment.engine,
        deployment.server,
        deployment.receiver,
        deployment.users,
    )
    organizer = sign_in(server.start(), "boss")
    down_for = dt.timedelta(0)
    with stopped(receiver):
        for name in ("ann", "bob", "cat"):
            rename(organizer, users[name], name.title() + "ie")

        def failures_recorded(count: int) -> bool:
            """Each message tried `count` times, and its next attempt set (none claimed)."""
            messages = outbox(engine)
            tries = logged(engine)
            return all(
                tries[m.id] == count and m.due_at < utcnow() + LEASE - dt.timedelta(minutes=1)
                for m in messages
            )

        wait_until(lambda: failures_recorded(1), DELIVERED_WITHIN, "the first attempts to fail")
        server.kill()
        ledger.inject(
            "kill -9 regdesk serve",
            during="webhook retries",
            point="retries waiting, the receiver down",
        )
        organizer = sign_in(server.start(), "boss")
        rename(organizer, users["dan"], "Danny")  # written while the receiver is still down
        for _ in range(2):  # the retries at about 5 s and 5 min
            before = logged(engine)
            down_for += until_all_due(engine)

            def tried_again(before: Counter[int] = before) -> bool:
                """Every event tried again; if not yet, time passes again: an attempt logged
                just before a move may set its next due time only after it (the log and the
                outbox are written one after the other)."""
                if all(logged(engine)[m.id] > before[m.id] for m in outbox(engine)):
                    return True
                time_passes(engine, until_all_due(engine))
                return False

            wait_until(tried_again, DELIVERED_WITHIN, "every event to be tried again", every=TURN)
        assert not receiver.received
    ledger.inject(
        "webhook receiver down", refused_for_minutes=round(down_for / dt.timedelta(minutes=1))
    )

    time_passes_until_all_sent(engine)
    messages = outbox(engine)
    assert len(messages) == 4
    arrived = by_webhook_id(receiver.received)
    assert {webhook_id: len(got) for webhook_id, got in arrived.items()} == {
        m.webhook_id: 1 for m in messages
    }
    assert {m.webhook_id: m.body.encode() for m in messages} == {
        webhook_id: got.body for webhook_id, [got] in arrived.items()
    }
    checked(receiver.received, server.base, receiver.url)
    for message in messages:
        *failed, (last, status) = log_of(engine, message.id)
        assert failed, "the receiver was down for the first attempts"
        assert all(code is None for _, code in failed), "refused: no status"
        assert (last, status) == (len(failed) + 1, 200)
