"""People of the organization: attendees, vendors, staff (api.md 2.2, 2.4)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, Date, Index, Integer, String, func, literal_column
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class User(Base):
    __tablename__ = "users"
    __table_args__ = (
        # Usernames and e-mails are unique whatever their case (decisions.md, Identifiers).
        Index("uq_users_username_lower", func.lower("username"), unique=True),
        Index("uq_users_email_lower", func.lower("email"), unique=True),
        # The admin area's user search finds names by prefix (regdesk.users.service).
        *(
            Index(f"ix_users_{name}_lower", func.lower(literal_column(name)))
            for name in ("first_name", "last_name", "preferred_name")
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64))
    email: Mapped[str] = mapped_column(String(320))
    verified: Mapped[bool] = mapped_column(Boolean, default=False)  # e-mail verified
    identity_verified: Mapped[bool] = mapped_column(Boolean, default=False)
    first_name: Mapped[str] = mapped_column(String(100))
    last_name: Mapped[str] = mapped_column(String(100))
    preferred_name: Mapped[str | None] = mapped_column(String(100))
    phone: Mapped[str | None] = mapped_column(String(16))  # E.164
    address_line1: Mapped[str | None] = mapped_column(String(200))
    address_line2: Mapped[str | None] = mapped_column(String(200))
    address_city: Mapped[str | None] = mapped_column(String(100))
    address_state: Mapped[str | None] = mapped_column(String(100))
    address_zipcode: Mapped[str | None] = mapped_column(String(20))
    address_country: Mapped[str | None] = mapped_column(String(2))  # ISO 3166-1 alpha-2
    born_at: Mapped[dt.date | None] = mapped_column(Date)
    newsletter: Mapped[bool] = mapped_column(Boolean, default=False)
    profile_picture_url: Mapped[str | None] = mapped_column(String(2000))
    password_hash: Mapped[str | None] = mapped_column(String(200))  # argon2id, never the password
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
