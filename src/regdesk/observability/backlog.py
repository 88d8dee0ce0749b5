"""The outbox's backlog, read from the database when Prometheus scrapes: how many messages
wait to be sent on each channel (mail, webhooks) and how long the oldest has waited.

Read at scrape time rather than counted by the writers: the outbox is shared by every process
and host, and only the table knows what all of them wrote and sent. One query per channel, a
range of the (channel, status, due_at) index: it reads the waiting messages only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from regdesk.db import utcnow
from regdesk.outbox.models import OutboxMessage, OutboxStatus

log = logging.getLogger("regdesk.observability")


def waiting(engine: Engine, channels: Sequence[str]) -> dict[str, tuple[int, float]]:
    """Each channel's waiting messages and the age in seconds of the oldest (0 when none)."""
    now = utcnow()
    found: dict[str, tuple[int, float]] = {}
    with engine.connect() as connection:
        for channel in channels:
            count, oldest = connection.execute(
                select(func.count(), func.min(OutboxMessage.created_at)).where(
                    OutboxMessage.channel == channel,
                    OutboxMessage.status == OutboxStatus.PENDING.value,
                )
            ).one()
            age = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
            found[channel] = (int(count), age)
    return found


class OutboxBacklog(Collector):
    """A Prometheus collector of `waiting` for the outbox's `channels` (app.py names them): a
    scrape while the database is away answers without these series rather than not at all."""

    def __init__(self, engine: Engine, channels: Sequence[str]) -> None:
        self.engine = engine
        self.channels = tuple(channels)

    def collect(self) -> Iterator[Metric]:
        try:
            backlog = waiting(self.engine, self.channels)
        except SQLAlchemyError as error:
            log.warning("outbox backlog not read for /metrics: %s", type(error).__name__)
            return
        messages = GaugeMetricFamily(
            "regdesk_outbox_waiting_messages",
            "Messages waiting in the outbox to be sent, by channel.",
            labels=["channel"],
        )
        ages = GaugeMetricFamily(
            "regdesk_outbox_oldest_waiting_seconds",
            "Age of the oldest message waiting in the outbox, by channel (0 when none waits).",
            labels=["channel"],
        )
        for channel, (count, age) in backlog.items():
            messages.add_metric([channel], count)
            ages.add_metric([channel], age)
        yield messages
        yield ages
