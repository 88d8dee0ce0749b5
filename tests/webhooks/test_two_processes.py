"""Two `regdesk serve` processes on one PostgreSQL database share the webhook outbox without
ever sending one attempt twice (events.md, Delivery: "several processes on PostgreSQL share the
work without sending one attempt twice"; issue 18): each claims what is due with `FOR UPDATE
SKIP LOCKED`, so a message claimed by one is not seen by the other until its next attempt.

EVENTS events are written the real way, by imports of up to a thousand new users in a
transaction each, while both servers deliver them to one fast receiver (bench/webhooks.py's, the
one `make bench` measures with) that answers 500 to the first attempt of one event in twenty, so
that those are tried twice. Each request is then matched, by its JWT's `jti`, to the attempt the
delivery log recorded for it: every event arrives, each (webhook-id, attempt) pair exactly once,
the attempts of each event are 1, or 1 and 2 for those refused once, and both processes sent a
share (each signs with its own address as issuer).

How many: REGDESK_TEST_WEBHOOK_EVENTS, 500 unless set, so that `make test` spends some ten
seconds on it on two cores; issue 18's 10,000 run under `make fuzz` (about four minutes on two
cores shared with other work, some 45 events a second).

The database is a cluster of the test's own (tests/faults/cluster.py, fsync off): it runs
whether or not REGDESK_TEST_POSTGRES_URL is set. The servers look at the outbox every POLL
seconds (REGDESK_OUTBOX_POLL_SECONDS), not a deployment's 5: the events are written by this
process, whose commits wake neither server, and the retries fall due between polls.
"""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.webhooks import Receiver, servers, subscribe, write_events, writing_events
from sqlalchemy import Engine, select
from tests.faults.cluster import Cluster
from tests.faults.support import wait_until

from regdesk.db import make_engine, read_session
from regdesk.migrations.runner import upgrade
from regdesk.outbox.models import OutboxMessage, OutboxStatus
from regdesk.webhooks.models import WebhookDelivery

EVENTS = int(os.environ.get("REGDESK_TEST_WEBHOOK_EVENTS", "500"))
REFUSED_ONCE = 20  # one event in this many is answered 500 at its first attempt
PROCESSES = 2
POLL = 0.2  # seconds


def refused_once(webhook_id: str) -> bool:
    return zlib.crc32(webhook_id.encode()) % REFUSED_ONCE == 0


def answer(webhook_id: str, seen: int) -> int:
    return 500 if seen == 0 and refused_once(webhook_id) else 200


@pytest.fixture
def database(tmp_path: Path) -> Iterator[str]:
    cluster = Cluster()
    try:
        cluster.start()
        url = cluster.create_database("regdesk")
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
    finally:
        cluster.destroy()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(answer)
    made.start()
    yield made
    made.stop()


def outbox(engine: Engine) -> dict[str, str]:
    """webhook-id: status of every webhook message."""
    with read_session(engine) as session:
        return {
            payload["webhookId"]: status
            for payload, status in session.execute(
                select(OutboxMessage.payload, OutboxMessage.status).where(
                    OutboxMessage.channel == "webhook"
                )
            )
        }


def attempts_logged(engine: Engine) -> dict[str, tuple[str, int]]:
    """jti: (webhook-id, attempt) of every attempt in the delivery log."""
    with read_session(engine) as session:
        return {
            jti: (webhook_id, attempt)
            for jti, webhook_id, attempt in session.execute(
                select(WebhookDelivery.jti, WebhookDelivery.webhook_id, WebhookDelivery.attempt)
            )
        }


def test_two_processes_send_each_attempt_of_each_event_exactly_once(
    database: str, receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGDESK_OUTBOX_POLL_SECONDS", str(POLL))  # the servers' environment
    writing_events()
    engine = make_engine(database)
    subscribe(engine, receiver.url)
    with servers(database, PROCESSES, tmp_path / "serve.log"):
        write_events(engine, EVENTS)
        expected_requests = EVENTS + sum(refused_once(i) for i in outbox(engine))

        def everything_answered() -> bool:
            statuses = outbox(engine)
            return len(receiver.arrivals) >= expected_requests and all(
                status == OutboxStatus.SENT.value for status in statuses.values()
            )

        wait_until(everything_answered, max(120.0, EVENTS / 20), "every event to be delivered", 0.5)
    statuses = outbox(engine)
    log = attempts_logged(engine)
    engine.dispose()

    assert len(statuses) == EVENTS
    arrivals = receiver.arrivals
    assert {a.webhook_id for a in arrivals} == set(statuses), "an event never arrived"
    # Every request is an attempt the log recorded, and no attempt was sent twice.
    assert all(a.jti in log for a in arrivals), "a request no attempt of the log accounts for"
    pairs = Counter(log[a.jti] for a in arrivals)
    assert [pair for pair, count in pairs.items() if count > 1] == []
    assert all(log[a.jti][0] == a.webhook_id for a in arrivals)
    attempts: dict[str, list[int]] = {}
    for webhook_id, attempt in sorted(pairs):
        attempts.setdefault(webhook_id, []).append(attempt)
    wrong = {
        webhook_id: got
        for webhook_id, got in attempts.items()
        if got != ([1, 2] if refused_once(webhook_id) else [1])
    }
    assert wrong == {}, f"{len(wrong)} events tried other than planned"
    assert len(arrivals) == len(log) == expected_requests
    shares = Counter(a.issuer for a in arrivals)
    assert len(shares) == PROCESSES, f"one process sent everything: {shares}"
