"""The webhooks' tables: an application's endpoints, the log of every delivery attempt, and
the changes the database's own triggers note for events the records cannot tell (events.md)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class WebhookEndpoint(Base):
    """Where an application wants events: a URL, the events (None: all), enabled or not."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_application_id", "application_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    application_id: Mapped[int] = mapped_column(
        ForeignKey("oauth_applications.id", ondelete="CASCADE")
    )
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list[str] | None] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Why it is disabled (by whom, or failing for 3 days): the admin area says it.
    disabled_reason: Mapped[str | None] = mapped_column(Text)
    disabled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class WebhookDelivery(Base):
    """One attempt to deliver one event to one endpoint, as the admin area lists it."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_endpoint_id_id", "endpoint_id", "id"),
        Index("ix_webhook_deliveries_message_id", "message_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(Integer)  # the outbox message (no key: kept apart)
    webhook_id: Mapped[str] = mapped_column(String(64))
    event: Mapped[str] = mapped_column(String(32))
    attempt: Mapped[int] = mapped_column(Integer)
    jti: Mapped[str] = mapped_column(String(64))  # the JWT's id: this attempt's
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)  # what went wrong, when no answer came
    duration_ms: Mapped[int] = mapped_column(Integer)
    answer: Mapped[str] = mapped_column(Text, default="")  # the answer's first bytes
    attempted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class WebhookChange(Base):
    """A change the triggers of migration 0015 noted (a volunteer submitted, deleted, assigned
    to or unassigned from a department), taken by the same transaction before it commits
    (webhooks.capture). Written only while an endpoint is enabled."""

    __tablename__ = "webhook_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(32))
    volunteer_id: Mapped[int] = mapped_column(Integer)
    department_id: Mapped[int | None] = mapped_column(Integer)
