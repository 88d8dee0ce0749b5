"""The web pages' own table: signed-in browser sessions (issue 4).

A session holds no secret: it is stored by the SHA-256 of its random id (the id itself is only
in the visitor's cookie).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class WebSession(Base):
    """A signed-in browser. Dies after an idle spell or at `expires_at`, whichever comes first."""

    __tablename__ = "web_sessions"
    __table_args__ = (
        Index("ix_web_sessions_user_id", "user_id"),
        Index("ix_web_sessions_expires_at", "expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 of the cookie
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_seen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())  # the absolute limit
    ip_address: Mapped[str | None] = mapped_column(String(45))
    user_agent: Mapped[str | None] = mapped_column(String(300))
