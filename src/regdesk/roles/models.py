"""Roles a user can hold, such as Staff or Dealer, for the convention or globally."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from sqlalchemy import Boolean, CheckConstraint, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class RoleScope(StrEnum):
    CONVENTION = "convention"
    GLOBAL = "global"


class Role(Base):
    __tablename__ = "roles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    staff: Mapped[bool] = mapped_column(Boolean, default=False)  # holders are `isStaff`
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class UserRole(Base):
    __tablename__ = "user_roles"
    __table_args__ = (
        CheckConstraint("scope IN ('convention', 'global')", name="scope"),
        # User search by roleId walks this index in user-id order (keyset pagination).
        Index("ix_user_roles_role_id_user_id", "role_id", "user_id"),
    )

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    role_id: Mapped[int] = mapped_column(
        ForeignKey("roles.id", ondelete="CASCADE"), primary_key=True
    )
    scope: Mapped[str] = mapped_column(String(16), default=RoleScope.CONVENTION.value)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
