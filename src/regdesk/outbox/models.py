"""The outbox's one table (see the package's docstring)."""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class OutboxStatus(enum.StrEnum):
    PENDING = "pending"  # to be sent (again)
    SENT = "sent"
    FAILED = "failed"  # its channel gave up on it


class OutboxMessage(Base):
    __tablename__ = "outbox_messages"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'sent', 'failed')", name="status"),
        # The due messages of a channel, oldest first.
        Index("ix_outbox_messages_channel_status_due_at", "channel", "status", "due_at"),
        Index("ix_outbox_messages_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel: Mapped[str] = mapped_column(String(16))  # "mail"
    # What the channel needs to send; a mail's is its heading and the message sealed (mail/).
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=OutboxStatus.PENDING.value)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # When it may next be tried: its next attempt's time, or the end of a claim on it.
    due_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
