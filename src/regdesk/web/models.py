"""The web pages' own tables: signed-in browser sessions and failed logins (issue 4).

Neither holds a secret: a session is stored by the SHA-256 of its random id (the id itself is
only in the visitor's cookie), and a failed login by hashes of what was typed, the address
and the trusted browser it came from.
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


class LoginFailure(Base):
    """One failed login, counted to throttle guessing (web/throttle.py says against whom)."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_login_key_occurred_at", "login_key", "occurred_at"),
        Index("ix_login_failures_address_key_occurred_at", "address_key", "occurred_at"),
        Index("ix_login_failures_device_key_occurred_at", "device_key", "occurred_at"),
        Index("ix_login_failures_occurred_at", "occurred_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    occurred_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # SHA-256 of what was typed as the login (case folded): never the text itself, which is
    # sometimes a password typed into the wrong field.
    login_key: Mapped[str] = mapped_column(String(64))
    address_key: Mapped[str] = mapped_column(String(64))  # the address, or its IPv6 /64
    # A browser trusted for the account (web/devices.py): its failures count against it alone.
    device_key: Mapped[str | None] = mapped_column(String(64))
