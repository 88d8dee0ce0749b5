"""Retries (events.md, Delivery): the same webhook-id on every attempt, events.md's schedule
with jitter, a receiver that was down gets everything, and an endpoint failing for 3 days is
disabled (time driven by the test's clock, never slept)."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from sqlalchemy import Engine, select
from tests.web.support import make_user
from tests.webhooks.support import Clock, Receiver, deliveries, endpoint, stopped

from regdesk.db import read_session, write_session
from regdesk.outbox.models import OutboxMessage
from regdesk.outbox.service import deliver
from regdesk.webhooks.delivery import SCHEDULE, Sender, retry_after
from regdesk.webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.postgres


def due_in(engine: Engine, clock: Clock) -> dt.timedelta:
    with read_session(engine) as session:
        due = session.scalars(select(OutboxMessage.due_at)).one()
    return due - clock.now


def test_a_retry_keeps_its_webhook_id(engine: Engine, receiver: Receiver, sender: Sender) -> None:
    receiver.answers = [500]
    endpoint(engine, receiver.url)
    make_user(engine, "fox", password=None)
    assert deliver(engine, sender.channel()).retrying == 1
    with write_session(engine) as session:  # due again now (its 5 s wait skipped)
        session.execute(OutboxMessage.__table__.update().values(due_at=OutboxMessage.created_at))
    assert deliver(engine, sender.channel()).sent == 1
    first, second = receiver.wait_for(2)
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    assert first.headers["authorization"] != second.headers["authorization"]  # its own jti
    assert [(d.attempt, d.status_code) for d in deliveries(engine)] == [(1, 500), (2, 200)]


def test_the_schedule_is_events_mds_with_jitter() -> None:
    rng = random.Random(7)
    expected = [*SCHEDULE, SCHEDULE[-1], SCHEDULE[-1]]
    for attempts, wait in enumerate(expected, start=1):
        drawn = retry_after(attempts, rng)
        assert wait * 0.9 <= drawn <= wait * 1.1
    assert len({retry_after(1, rng) for _ in range(20)}) > 1  # jittered


def test_a_receiver_down_then_up_gets_everything(
    engine: Engine, receiver: Receiver, sender: Sender, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    endpoint(engine, receiver.url)
    with stopped(receiver):
        for name in ("ann", "bob", "cat"):
            make_user(engine, name, password=None)
        assert deliver(engine, sender.channel()).retrying == 3
        clock.advance(dt.timedelta(seconds=6))
        assert deliver(engine, sender.channel()).retrying == 3
    clock.advance(dt.timedelta(minutes=6))
    assert deliver(engine, sender.channel()).sent == 3
    got = receiver.wait_for(3)
    assert sorted(r.data["user"]["username"] for r in got) == ["ann", "bob", "cat"]
    assert [d.attempt for d in deliveries(engine)] == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_an_endpoint_failing_for_three_days_is_disabled(
    engine: Engine, receiver: Receiver, sender: Sender, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(monkeypatch)
    endpoint_id = endpoint(engine, receiver.url)
    receiver.answers = [503] * 100
    make_user(engine, "fox", password=None)
    waits = []
    for _ in range(30):
        done = deliver(engine, sender.channel())
        if done.failed:
            break
        wait = due_in(engine, clock)
        waits.append(wait)
        clock.advance(wait)
    assert done.failed == 1
    # about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then every 10 h, for at least 3 days
    for wait, planned in zip(waits, SCHEDULE, strict=False):
        assert planned * 0.9 <= wait <= planned * 1.1
    assert sum(waits, dt.timedelta()) >= dt.timedelta(days=3)
    with read_session(engine) as session:
        disabled = session.get(WebhookEndpoint, endpoint_id)
        assert disabled is not None
        assert not disabled.enabled
        assert disabled.disabled_reason is not None
        assert "HTTP 503" in disabled.disabled_reason
        assert session.scalars(select(OutboxMessage.status)).one() == "failed"
    make_user(engine, "eve", password=None)
    with read_session(engine) as session:  # a disabled endpoint is written nothing
        assert len(session.scalars(select(OutboxMessage.id)).all()) == 1


def test_an_endpoint_that_succeeds_meanwhile_stays_enabled(
    engine: Engine, receiver: Receiver, sender: Sender, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One event it keeps refusing is not a dead endpoint."""
    clock = Clock(monkeypatch)
    endpoint_id = endpoint(engine, receiver.url)
    receiver.answers = [400]
    make_user(engine, "fox", password=None)
    deliver(engine, sender.channel())
    clock.advance(dt.timedelta(days=2))
    make_user(engine, "eve", password=None)
    receiver.answers = [200, *([400] * 30)]  # eve's event goes; fox's keeps failing
    for _ in range(30):
        if deliver(engine, sender.channel()).failed:
            break
        clock.advance(dt.timedelta(hours=11))
    with read_session(engine) as session:
        kept = session.get(WebhookEndpoint, endpoint_id)
        assert kept is not None
        assert kept.enabled
