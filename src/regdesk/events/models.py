"""The organization's events (one is current) and the options each asks volunteers."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Date,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from regdesk.db import Base, UTCDateTime, utcnow

# The current event's id, for the subqueries of the reads on every request's path
# (db.driver.Query). A literal, not a bound parameter: SQLite compiles a statement again at every
# run when a value bound to it could change its plan, and `is_current = :current` could (it is a
# partial index's column), so every page and record read built on it was compiled anew at each
# request. uq_events_current's SQLite predicate is this one (migration 0019), so that SQLite
# finds the row by the index; PostgreSQL reads `is_current = TRUE` as its index's `is_current`.
CURRENT_EVENT_ID = "(SELECT id FROM events WHERE is_current = TRUE)"


def in_current_event(alias: str, *, sqlite: bool) -> tuple[str, str]:
    """The condition and the ordering of a page of the current event's records of the table
    `alias` names, in id order, as each database plans it best (`Query`'s `sqlite` form).

    SQLite seeks its (event_id, id) index on `event_id = ... AND id > :after`. PostgreSQL, told
    `event_id =`, folds the event out of `ORDER BY`, and then also weighs walking the primary key
    in id order, filtering the event's rows: planned once for any values it took that road, and
    a first page walked past every earlier event's record (the demo's 7,000 volunteers: 1.3 ms
    against 0.2), so those pages were planned again at every run. As a range, the event stays
    in the ordering, which only the (event_id, id) index gives, and its scan starts at the
    event's `after`: planned once, a page took a fifth less of the database server's CPU than
    planned at every run (615 against 770 µs, the page of 100 volunteers alone in a loop)."""
    if sqlite:
        return f"{alias}.event_id = {CURRENT_EVENT_ID}", f"{alias}.id"
    current = f"{alias}.event_id >= {CURRENT_EVENT_ID} AND {alias}.event_id <= {CURRENT_EVENT_ID}"
    return current, f"{alias}.event_id, {alias}.id"


class OptionType(StrEnum):
    SELECT = "select"
    MULTI = "multi"
    TEXT = "text"
    NUMBER = "number"


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (
        # At most one current event: a partial unique index, on both databases.
        Index(
            "uq_events_current",
            "is_current",
            unique=True,
            sqlite_where=text("is_current = TRUE"),
            postgresql_where=text("is_current"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    starts_on: Mapped[dt.date | None] = mapped_column(Date)
    ends_on: Mapped[dt.date | None] = mapped_column(Date)
    is_current: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utcnow)


class EventOption(Base):
    """A question the event asks its volunteers (api.md 2.5, Option)."""

    __tablename__ = "event_options"
    __table_args__ = (
        UniqueConstraint("event_id", "name"),
        CheckConstraint("type IN ('select', 'multi', 'text', 'number')", name="type"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(16))
    # For select and multi: the allowed values, or null when any value is accepted.
    choices: Mapped[list[str] | None] = mapped_column(JSON)
    position: Mapped[int] = mapped_column(Integer, default=0)


def option_value_error(option_type: str, choices: list[str] | None, value: Any) -> str | None:
    """Why `value` does not fit an option of this type, or None when it does."""
    if option_type == OptionType.NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number for an option of type number"
        return None
    if option_type == OptionType.MULTI:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "must be an array of strings for an option of type multi"
        unknown = [v for v in value if choices is not None and v not in choices]
        if unknown:
            return f"{unknown[0]!r} is not one of the choices {choices}"
        return None
    if not isinstance(value, str):
        return f"must be a string for an option of type {option_type}"
    if option_type == OptionType.SELECT and choices is not None and value not in choices:
        return f"{value!r} is not one of the choices {choices}"
    return None
