"""Volunteer applications for an event (api.md 2.5)."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow


class DepartmentState(StrEnum):
    """api.md 3.1, in the order records list them."""

    EXPERIENCE = "experience"
    INTEREST = "interest"
    AVOID = "avoid"
    ASSIGNMENT = "assignment"
    REQUEST = "request"


STATE_ORDER = {state.value: position for position, state in enumerate(DepartmentState)}


class Volunteer(Base):
    __tablename__ = "volunteers"
    __table_args__ = (
        UniqueConstraint("event_id", "user_id"),
        # Volunteer search pages through one event in id order (keyset pagination).
        Index("ix_volunteers_event_id_id", "event_id", "id"),
        # A user's applications (and the triggers that keep documents in step, migration 0003).
        Index("ix_volunteers_user_id", "user_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class VolunteerContactMethod(Base):
    __tablename__ = "volunteer_contact_methods"
    __table_args__ = (UniqueConstraint("volunteer_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    volunteer_id: Mapped[int] = mapped_column(ForeignKey("volunteers.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(100))
    value: Mapped[str] = mapped_column(String(500))
    is_primary: Mapped[bool] = mapped_column(Boolean, default=False)


class VolunteerDepartmentState(Base):
    """One flag (api.md 3.1) a volunteer holds for one department."""

    __tablename__ = "volunteer_department_states"
    __table_args__ = (
        CheckConstraint(
            "state IN ('experience', 'interest', 'avoid', 'assignment', 'request')", name="state"
        ),
        # Organizers filter applications by department and state (e.g. every assignment).
        Index("ix_volunteer_department_states_department_id_state", "department_id", "state"),
    )

    volunteer_id: Mapped[int] = mapped_column(
        ForeignKey("volunteers.id", ondelete="CASCADE"), primary_key=True
    )
    department_id: Mapped[int] = mapped_column(
        ForeignKey("departments.id", ondelete="CASCADE"), primary_key=True
    )
    state: Mapped[str] = mapped_column(String(16), primary_key=True)


class VolunteerOptionValue(Base):
    __tablename__ = "volunteer_option_values"

    volunteer_id: Mapped[int] = mapped_column(
        ForeignKey("volunteers.id", ondelete="CASCADE"), primary_key=True
    )
    option_id: Mapped[int] = mapped_column(
        ForeignKey("event_options.id", ondelete="CASCADE"), primary_key=True
    )
    value: Mapped[Any] = mapped_column(JSON)  # number, string, or array of strings
