"""Failed logins, counted to throttle guessing, and requests for a password-reset link,
counted to throttle mail (accounts/throttle.py says against whom).

No secret is kept: a failed login is stored by hashes of what was typed, the address and the
trusted browser it came from.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class LoginFailure(Base):
    """One failed login, or one request for a reset link, under keys of its own (accounts/
    throttle.py says against whom)."""

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
    # A browser trusted for the account (accounts/devices.py): its failures count against it alone.
    device_key: Mapped[str | None] = mapped_column(String(64))
