"""The options the current event asks its volunteers (the admin's "Event options").

An option is one question of the volunteer form (api.md 2.5, Option). Its rules are every
form's (regdesk.events.options): answers keep their option's type, so an option that has
answers cannot change type; deleting an option deletes its answers.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.events.models import EventOption
from regdesk.events.options import CHOICE_MAX_LENGTH, OptionKind, OptionSpec
from regdesk.volunteers.models import VolunteerOptionValue

VOLUNTEER_OPTIONS = OptionKind(
    EventOption, VolunteerOptionValue, target_type="event_option", answered_by="Volunteers"
)

__all__ = [
    "CHOICE_MAX_LENGTH",
    "VOLUNTEER_OPTIONS",
    "OptionSpec",
    "answer_counts",
    "create_option",
    "delete_option",
    "update_option",
]


def answer_counts(session: Session, option_ids: list[int]) -> dict[int, int]:
    """How many volunteers answered each of these options."""
    return VOLUNTEER_OPTIONS.answer_counts(session, option_ids)


def create_option(session: Session, actor: Actor, spec: OptionSpec) -> EventOption:
    """A new option of the current event (made if need be), by default asked last."""
    return VOLUNTEER_OPTIONS.create(session, actor, spec)


def update_option(session: Session, actor: Actor, option: EventOption, spec: OptionSpec) -> None:
    """Saves the organizer's changes; the type stays while volunteers have answered."""
    VOLUNTEER_OPTIONS.update(session, actor, option, spec)


def delete_option(session: Session, actor: Actor, option: EventOption) -> int:
    """Deletes the option and every answer to it; how many answers went with it."""
    return VOLUNTEER_OPTIONS.delete(session, actor, option)
