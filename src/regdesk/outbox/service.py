"""Writing to the outbox in the caller's transaction, and delivering what is due (see the
package's docstring)."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event, insert, select, update
from sqlalchemy.orm import Session

from regdesk.db import is_sqlite, read_session, utcnow, write_session
from regdesk.outbox.models import OutboxMessage, OutboxStatus

LEASE = dt.timedelta(minutes=5)  # a claim's length: longer than any one send may take
FIRST_RETRY = dt.timedelta(seconds=30)
LONGEST_RETRY = dt.timedelta(hours=1)
ERROR_MAX = 2000  # characters of an error kept

# Delivery runners of this process (app.py, `regdesk mail send-test`) waiting for new mail:
# a commit that wrote to the outbox wakes them, so a message leaves at once, not at the next
# poll.
_waiting: set[threading.Event] = set()


def enqueue_many(session: Session, channel: str, payloads: list[dict[str, Any]]) -> None:
    """Messages for `channel` in one statement (a transaction's webhook events), sent once the
    session's transaction commits (never if it does not)."""
    if not payloads:
        return
    session.execute(insert(OutboxMessage), [{"channel": channel, "payload": p} for p in payloads])
    if not event.contains(session, "after_commit", _wake):
        event.listen(session, "after_commit", _wake, once=True)


def enqueue(session: Session, channel: str, payload: dict[str, Any]) -> int:
    """A message for `channel`, sent once the session's transaction commits (never if it does
    not): its id."""
    message_id = session.execute(
        insert(OutboxMessage).values(channel=channel, payload=payload).returning(OutboxMessage.id)
    ).scalar_one()
    if not event.contains(session, "after_commit", _wake):
        event.listen(session, "after_commit", _wake, once=True)
    return int(message_id)


def _wake(_session: Session) -> None:
    for waiting in list(_waiting):
        waiting.set()


def waiting_for_new(flag: threading.Event) -> None:
    """Set `flag` whenever a commit in this process writes to the outbox."""
    _waiting.add(flag)


def stop_waiting(flag: threading.Event) -> None:
    _waiting.discard(flag)


@dataclass(frozen=True)
class Claimed:
    id: int
    payload: dict[str, Any]
    attempts: int  # this one included
    created_at: dt.datetime


class GiveUp(Exception):
    """Raised by a channel's send: this message can never go (its webhook endpoint is gone):
    marked failed now, without waiting for `give_up_after`."""


@dataclass(frozen=True)
class Channel:
    """How one kind of message is delivered: `send` raises on failure (its message is shown
    in the admin area, so it must not hold a secret); after `give_up_after` since the message
    was written, a failure is final."""

    name: str
    send: Callable[[dict[str, Any]], None] | None
    give_up_after: dt.timedelta
    # What of a message is kept once it is sent or given up (the rest may hold secrets, a
    # mail's links); None: all of it.
    kept: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # The wait after the n-th failed attempt (webhooks keep events.md's); None: `backoff`.
    schedule: Callable[[int], dt.timedelta] | None = None
    # Called in the transaction that marks a message failed, with its last error (webhooks
    # disable the endpoint).
    gave_up: Callable[[Session, Claimed, str], None] | None = None
    # Instead of `send`, for a channel that needs the message's id and attempt number (the
    # webhooks' delivery log).
    send_claimed: Callable[[Claimed], None] | None = None

    def attempt(self, message: Claimed) -> None:
        if self.send_claimed is not None:
            self.send_claimed(message)
        else:
            assert self.send is not None
            self.send(message.payload)


@dataclass
class Delivered:
    sent: int = 0
    retrying: int = 0
    failed: int = 0


def deliver(
    engine: Engine,
    channel: Channel,
    *,
    limit: int = 10,
    stopping: threading.Event | None = None,
) -> Delivered:
    """Send what is due on `channel` now, a claimed batch at a time, until nothing is due (or
    `stopping` is set: what is claimed and not yet sent waits for its claim to expire)."""
    done = Delivered()
    while claimed := claim(engine, channel.name, limit=limit):
        for position, message in enumerate(claimed):
            if stopping is not None and stopping.is_set():
                release(engine, claimed[position:])
                return done
            try:
                channel.attempt(message)
            except GiveUp as error:
                record_failure(engine, message, channel, f"{error}", final=True)
                done.failed += 1
            except Exception as error:  # any failure: tried again later, or given up
                final = record_failure(engine, message, channel, f"{error}")
                done.failed += final
                done.retrying += not final
            else:
                record_sent(engine, message, channel)
                done.sent += 1
        if len(claimed) < limit:
            break
    return done


def claim(
    engine: Engine, channel: str, *, limit: int, now: dt.datetime | None = None
) -> list[Claimed]:
    """The due messages of `channel` (oldest first), each now claimed for LEASE: no other
    process claims them meanwhile (PostgreSQL skips rows another claim holds locked)."""
    now = now or utcnow()
    due = (
        select(OutboxMessage.id)
        .where(
            OutboxMessage.channel == channel,
            OutboxMessage.status == OutboxStatus.PENDING.value,
            OutboxMessage.due_at <= now,
        )
        .order_by(OutboxMessage.due_at, OutboxMessage.id)
        .limit(limit)
    )
    # Most polls find nothing due: asked first without a write transaction, which on SQLite
    # would hold the database's one write lock for nothing every few seconds.
    with read_session(engine) as session:
        if session.execute(due.limit(1)).first() is None:
            return []
    with write_session(engine) as session:
        if not is_sqlite(session):  # SQLite: the write transaction already excludes others
            due = due.with_for_update(skip_locked=True)
        ids = list(session.scalars(due))
        if not ids:
            return []
        rows = session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id.in_(ids))
            .values(due_at=now + LEASE, attempts=OutboxMessage.attempts + 1)
            .returning(
                OutboxMessage.id,
                OutboxMessage.payload,
                OutboxMessage.attempts,
                OutboxMessage.created_at,
            )
        ).all()
    return sorted((Claimed(*row) for row in rows), key=lambda m: ids.index(m.id))


def release(engine: Engine, messages: list[Claimed]) -> None:
    """Claimed messages given back unsent (their process is stopping): due again now, the
    attempt not counted."""
    with write_session(engine) as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id.in_([message.id for message in messages]))
            .values(due_at=utcnow(), attempts=OutboxMessage.attempts - 1)
        )


def record_sent(engine: Engine, message: Claimed, channel: Channel) -> None:
    values: dict[str, Any] = {
        "status": OutboxStatus.SENT.value,
        "sent_at": utcnow(),
        "last_error": None,
    }
    if channel.kept is not None:
        values["payload"] = channel.kept(message.payload)
    with write_session(engine) as session:
        session.execute(update(OutboxMessage).where(OutboxMessage.id == message.id).values(values))


def record_failure(
    engine: Engine,
    message: Claimed,
    channel: Channel,
    error: str,
    *,
    now: dt.datetime | None = None,
    final: bool = False,
) -> bool:
    """The failed attempt noted, and the next one set after the channel's schedule (`backoff`
    unless it has its own); True when this was the last (`final`, or the channel gives up:
    the message is marked failed)."""
    now = now or utcnow()
    final = final or now - message.created_at >= channel.give_up_after
    values: dict[str, Any] = {"last_error": error[:ERROR_MAX]}
    if final:
        values["status"] = OutboxStatus.FAILED.value
        if channel.kept is not None:
            values["payload"] = channel.kept(message.payload)
    else:
        values["due_at"] = now + (channel.schedule or backoff)(message.attempts)
    with write_session(engine) as session:
        session.execute(update(OutboxMessage).where(OutboxMessage.id == message.id).values(values))
        if final and channel.gave_up is not None:
            channel.gave_up(session, message, error)
    return final


def backoff(attempts: int, rng: random.Random | None = None) -> dt.timedelta:
    """The wait after the `attempts`-th failed attempt: doubling from FIRST_RETRY up to
    LONGEST_RETRY, each drawn between half and all of it (jitter: many messages failed at
    once do not come back at once)."""
    ceiling: dt.timedelta = min(FIRST_RETRY * 2 ** min(attempts - 1, 20), LONGEST_RETRY)
    share = 0.5 + 0.5 * (rng or random).random()
    return ceiling * share
