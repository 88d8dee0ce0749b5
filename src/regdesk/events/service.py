"""The convention's events: the current one, and the options it asks its volunteers, in the
order its form asks them. Managing options, the volunteers' and the registrations' alike, is
events/options.py's.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.events.models import Event, EventOption

# The event an import or a new option makes when there is none (operator.md, Import document).
DEFAULT_EVENT_NAME = "Current event"


def current_event(session: Session) -> Event | None:
    return session.scalars(select(Event).where(Event.is_current.is_(True))).first()


def current_event_for_writing(session: Session) -> Event:
    """The current event, made (as an import of volunteers makes it) when there is none yet."""
    event = current_event(session)
    if event is not None:
        return event
    event = session.scalars(select(Event).where(Event.name == DEFAULT_EVENT_NAME)).first()
    if event is None:
        event = Event(name=DEFAULT_EVENT_NAME)
        session.add(event)
    event.is_current = True
    session.flush()
    return event


def event_options(session: Session, event_id: int) -> list[EventOption]:
    """The event's options in the order its form asks them (as records list them, api.md 2.5)."""
    return list(
        session.scalars(
            select(EventOption)
            .where(EventOption.event_id == event_id)
            .order_by(EventOption.position, EventOption.id)
        )
    )


def current_options(session: Session) -> list[EventOption]:
    event = current_event(session)
    return event_options(session, event.id) if event else []


def find_current_option(session: Session, option_id: int) -> EventOption | None:
    """The option of the current event with this id (options of past events are not edited)."""
    return session.scalars(
        select(EventOption)
        .join(Event, Event.id == EventOption.event_id)
        .where(EventOption.id == option_id, Event.is_current.is_(True))
    ).first()
