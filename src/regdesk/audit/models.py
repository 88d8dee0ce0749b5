"""The audit log: who changed what, and the security events around accounts and tokens."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class AuditEvent(Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_occurred_at", "occurred_at"),
        Index("ix_audit_events_action", "action"),
        Index("ix_audit_events_target", "target_type", "target_id"),
        Index("ix_audit_events_actor_user_id", "actor_user_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    occurred_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    action: Mapped[str] = mapped_column(String(64))  # e.g. "app.secret_rotated"
    actor: Mapped[str] = mapped_column(String(200))  # "cli:alice", "user:17", "app:3"
    actor_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    target_type: Mapped[str | None] = mapped_column(String(32))
    target_id: Mapped[str | None] = mapped_column(String(64))
    ip_address: Mapped[str | None] = mapped_column(String(45))
    # Never a secret, token or password: names of changed fields and counts, not values.
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The id of the request that recorded it (X-Request-ID, as in the logs); None outside one.
    request_id: Mapped[str | None] = mapped_column(String(64))
