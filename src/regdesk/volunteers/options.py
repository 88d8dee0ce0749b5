"""The options the current event asks its volunteers (the admin's "Event options").

An option is one question of the volunteer form (api.md 2.5, Option): a select or multi with
its choices, a free text, or a number. Answers keep their option's type, so an option that
has answers cannot change type; deleting an option deletes its answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.errors import Invalid
from regdesk.events.models import EventOption, OptionType
from regdesk.events.service import current_event_for_writing
from regdesk.fields import one_of, text
from regdesk.volunteers.models import VolunteerOptionValue

OPTIONS: Any = EventOption.__table__
MAX_CHOICES = 100
CHOICE_MAX_LENGTH = 200
POSITION_MAX = 10_000
POSITION_STEP = 10
TYPES_WITH_CHOICES = (OptionType.SELECT.value, OptionType.MULTI.value)

_parse_name = text(OPTIONS.c.name, nonempty=True)
_parse_type = one_of(OptionType)


def answer_counts(session: Session, option_ids: list[int]) -> dict[int, int]:
    """How many volunteers answered each of these options."""
    if not option_ids:
        return {}
    rows = session.execute(
        select(VolunteerOptionValue.option_id, func.count().label("answers"))
        .where(VolunteerOptionValue.option_id.in_(option_ids))
        .group_by(VolunteerOptionValue.option_id)
    )
    return {row.option_id: row.answers for row in rows}


@dataclass(frozen=True)
class OptionSpec:
    """An option as the organizer typed it: choices one per line, position as digits."""

    name: str
    type: str
    choices: str = ""
    position: str = ""


@dataclass(frozen=True)
class _Checked:
    name: str
    type: str
    choices: list[str] | None
    position: int | None


def _check(session: Session, event_id: int, spec: OptionSpec, option_id: int | None) -> _Checked:
    """The option's values, or Invalid naming each bad field (name, type, choices, position)."""
    errors: dict[str, str] = {}
    name = kind = ""
    try:
        name = _parse_name(spec.name.strip())
    except ValueError as exc:
        errors["name"] = f"The name {exc}."
    try:
        kind = _parse_type(spec.type)
    except ValueError:
        errors["type"] = "Choose one of select, multi, text or number."
    choices = [line.strip() for line in spec.choices.splitlines() if line.strip()]
    if kind in TYPES_WITH_CHOICES:
        problem = _choices_problem(choices)
        if problem:
            errors["choices"] = problem
    elif choices and kind:
        errors["choices"] = "Only select and multi options have choices; leave this empty."
    position: int | None = None
    if spec.position.strip():
        digits = spec.position.strip()
        fits = digits.isascii() and digits.isdigit() and len(digits) <= len(str(POSITION_MAX))
        if not fits or int(digits) > POSITION_MAX:
            errors["position"] = f"The position must be a whole number from 0 to {POSITION_MAX}."
        else:
            position = int(digits)
    if name and "name" not in errors:
        taken = session.scalar(
            select(EventOption.id).where(
                EventOption.event_id == event_id,
                EventOption.name == name,
                EventOption.id != (option_id or 0),
            )
        )
        if taken is not None:
            errors["name"] = f"The event already has an option named {name!r}."
    if errors:
        raise Invalid(errors)
    return _Checked(name, kind, choices if kind in TYPES_WITH_CHOICES else None, position)


def _choices_problem(choices: list[str]) -> str | None:
    if not choices:
        return "Give at least one choice, one per line."
    if len(choices) > MAX_CHOICES:
        return f"Give at most {MAX_CHOICES} choices."
    for index, choice in enumerate(choices):
        if len(choice) > CHOICE_MAX_LENGTH:
            return f"The choice {choice[:40]!r}... is longer than {CHOICE_MAX_LENGTH} characters."
        if choice in choices[:index]:
            return f"The choice {choice!r} is listed twice."
    return None


def create_option(session: Session, actor: Actor, spec: OptionSpec) -> EventOption:
    """A new option of the current event (made if need be), by default asked last."""
    event = current_event_for_writing(session)
    checked = _check(session, event.id, spec, None)
    position = checked.position
    if position is None:
        last = session.scalar(
            select(func.max(EventOption.position)).where(EventOption.event_id == event.id)
        )
        # In steps of ten, leaving room to put an option between two others later.
        position = min((last or 0) // POSITION_STEP * POSITION_STEP + POSITION_STEP, POSITION_MAX)
    option = EventOption(
        event_id=event.id,
        name=checked.name,
        type=checked.type,
        choices=checked.choices,
        position=position,
    )
    session.add(option)
    session.flush()
    record_event(
        session,
        actor,
        "event_option.created",
        target_type="event_option",
        target_id=option.id,
        details={"event": event.id, "name": option.name, "type": option.type},
    )
    return option


def update_option(session: Session, actor: Actor, option: EventOption, spec: OptionSpec) -> None:
    """Saves the organizer's changes; the type stays while volunteers have answered."""
    checked = _check(session, option.event_id, spec, option.id)
    if checked.type != option.type and answer_counts(session, [option.id]):
        raise Invalid({"type": "Volunteers have answered this option, so its type cannot change."})
    wanted = {
        "name": checked.name,
        "type": checked.type,
        "choices": checked.choices,
        "position": option.position if checked.position is None else checked.position,
    }
    record_changes(
        session,
        actor,
        option,
        dict(sorted(wanted.items())),  # named in the event in this order
        action="event_option.updated",
        target_type="event_option",
        key="changed",
    )


def delete_option(session: Session, actor: Actor, option: EventOption) -> int:
    """Deletes the option and every answer to it; how many answers went with it."""
    answers = answer_counts(session, [option.id]).get(option.id, 0)
    session.execute(delete(VolunteerOptionValue).where(VolunteerOptionValue.option_id == option.id))
    session.execute(delete(EventOption).where(EventOption.id == option.id))
    record_event(
        session,
        actor,
        "event_option.deleted",
        target_type="event_option",
        target_id=option.id,
        details={"name": option.name, "answers": answers},
    )
    return answers
