"""The outbox's delivery machinery (regdesk.outbox), on each database: a message is written
with its change or not at all, claimed by one deliverer at a time, tried again after a growing
wait, given up after its channel's time, and never lost by a deliverer that stops."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from regdesk.db import make_engine, read_session, utcnow, write_session
from regdesk.outbox.models import OutboxMessage
from regdesk.outbox.service import (
    FIRST_RETRY,
    LEASE,
    LONGEST_RETRY,
    Channel,
    backoff,
    claim,
    deliver,
    enqueue,
    record_failure,
    stop_waiting,
    waiting_for_new,
)

pytestmark = pytest.mark.postgres


def messages(engine: Engine) -> list[OutboxMessage]:
    with read_session(engine) as session:
        return list(session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def queue(engine: Engine, count: int, channel: str = "test") -> None:
    with write_session(engine) as session:
        for n in range(count):
            enqueue(session, channel, {"n": n})


def a_change_that_fails(engine: Engine) -> None:
    with write_session(engine) as session:
        enqueue(session, "test", {"n": 1})
        raise RuntimeError("the change failed")


def test_a_message_is_written_with_its_change_and_never_without_it(engine: Engine) -> None:
    with pytest.raises(RuntimeError):
        a_change_that_fails(engine)
    assert messages(engine) == []
    queue(engine, 1)
    [message] = messages(engine)
    assert (message.status, message.attempts, message.payload) == ("pending", 0, {"n": 0})


def test_a_commit_that_wrote_to_the_outbox_wakes_the_deliverers_a_rollback_does_not(
    engine: Engine,
) -> None:
    woken = threading.Event()
    waiting_for_new(woken)
    try:
        with pytest.raises(RuntimeError):
            a_change_that_fails(engine)
        assert not woken.is_set()
        with write_session(engine) as session:
            session.execute(select(1))  # a commit that wrote nothing to the outbox
        assert not woken.is_set()
        queue(engine, 1)
        assert woken.is_set()
    finally:
        stop_waiting(woken)


def test_concurrent_deliverers_never_claim_the_same_message(
    engine: Engine, database_url: str
) -> None:
    queue(engine, 120)
    engines = [make_engine(database_url) for _ in range(4)]
    start = threading.Barrier(len(engines))

    def claim_all(mine: Engine) -> list[int]:
        start.wait()
        claimed: list[int] = []
        while batch := claim(mine, "test", limit=7):
            claimed += [message.id for message in batch]
        return claimed

    try:
        with ThreadPoolExecutor(len(engines)) as pool:
            found = list(pool.map(claim_all, engines))
    finally:
        for mine in engines:
            mine.dispose()
    counted = Counter(id_ for claimed in found for id_ in claimed)
    assert len(counted) == 120
    assert set(counted.values()) == {1}, "a message was claimed twice"
    assert {message.attempts for message in messages(engine)} == {1}


def test_a_claim_that_expires_is_claimed_again(engine: Engine) -> None:
    """A deliverer that dies mid-send loses nothing: after the lease the message is due."""
    queue(engine, 1)
    now = utcnow()
    [first] = claim(engine, "test", limit=10, now=now)
    assert claim(engine, "test", limit=10, now=now + LEASE - dt.timedelta(seconds=1)) == []
    [again] = claim(engine, "test", limit=10, now=now + LEASE + dt.timedelta(seconds=1))
    assert (again.id, again.attempts) == (first.id, 2)


def failing(give_up_after: dt.timedelta = dt.timedelta(days=3)) -> Channel:
    def send(payload: dict[str, Any]) -> None:
        raise ConnectionRefusedError("the server is away")

    return Channel("test", send, give_up_after)


def test_a_failed_message_is_tried_again_after_a_growing_wait_then_given_up(
    engine: Engine,
) -> None:
    queue(engine, 1)
    before = utcnow()
    done = deliver(engine, failing())
    assert (done.sent, done.retrying, done.failed) == (0, 1, 0)
    [message] = messages(engine)
    assert message.status == "pending"
    assert message.last_error == "the server is away"
    assert before + FIRST_RETRY / 2 <= message.due_at <= utcnow() + FIRST_RETRY
    assert deliver(engine, failing()).retrying == 0  # not due yet: not tried

    later = message.created_at + dt.timedelta(days=3)
    [claimed] = claim(engine, "test", limit=1, now=later)
    assert record_failure(engine, claimed, failing(), "still away", now=later) is True
    [message] = messages(engine)
    assert (message.status, message.attempts, message.last_error) == ("failed", 2, "still away")
    assert claim(engine, "test", limit=1, now=later + dt.timedelta(days=30)) == []


def test_the_wait_doubles_with_jitter_up_to_an_hour() -> None:
    rng = random.Random(4)
    for attempts in range(1, 30):
        ceiling = min(FIRST_RETRY * 2 ** (attempts - 1), LONGEST_RETRY)
        waits = [backoff(attempts, rng) for _ in range(50)]
        assert all(ceiling / 2 <= wait <= ceiling for wait in waits)
        assert len(set(waits)) > 1  # jitter: not all at once
    assert backoff(30, rng) <= LONGEST_RETRY


def test_a_stopping_deliverer_gives_back_what_it_claimed_and_did_not_send(
    engine: Engine,
) -> None:
    queue(engine, 5)
    stopping = threading.Event()
    sent: list[int] = []

    def send(payload: dict[str, Any]) -> None:
        sent.append(payload["n"])
        if len(sent) == 2:
            stopping.set()  # the server is shutting down

    done = deliver(engine, Channel("test", send, dt.timedelta(days=3)), stopping=stopping)
    assert done.sent == 2
    rows = messages(engine)
    assert [m.status for m in rows] == ["sent", "sent", "pending", "pending", "pending"]
    assert [m.attempts for m in rows[2:]] == [0, 0, 0]  # given back: due now, not counted
    assert len(claim(engine, "test", limit=10)) == 3


def test_only_the_channels_own_messages_are_delivered(engine: Engine) -> None:
    queue(engine, 2, channel="mail")
    queue(engine, 1, channel="webhook")
    got: list[Any] = []
    deliver(engine, Channel("mail", got.append, dt.timedelta(days=3)))
    assert len(got) == 2
    with write_session(engine) as session:
        session.execute(update(OutboxMessage).values(due_at=utcnow()))
    assert [m.status for m in messages(engine)] == ["sent", "sent", "pending"]
