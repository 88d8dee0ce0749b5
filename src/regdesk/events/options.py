"""The rules of an event's options, whichever form asks them: the volunteer form's
(volunteers/options.py) and the registration form's (registrations/options.py).

An option is one question (api.md 2.5, Option): a select or multi with its choices, a free
text, or a number. Answers keep their option's type, so an option that has answers cannot
change type; deleting an option deletes its answers. `OptionKind` holds these rules for one
kind of option, given its table and the table of its answers; `answer_from_form` reads an
answer as a form sends it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import table_of
from regdesk.errors import Invalid
from regdesk.events.models import Event, OptionType, option_value_error
from regdesk.events.service import current_event_for_writing
from regdesk.fields import one_of, text

MAX_CHOICES = 100
CHOICE_MAX_LENGTH = 200
POSITION_MAX = 10_000
POSITION_STEP = 10
TYPES_WITH_CHOICES = (OptionType.SELECT.value, OptionType.MULTI.value)
# An answer as a form sends it.
TEXT_ANSWER_MAX = 1000
MULTI_ANSWER_MAX = 50
NUMBER_MAX = 10**12
NUMBER_TEXT_MAX = 40

_parse_type = one_of(OptionType)


class OptionRow(Protocol):
    """What every kind of option is: a row of its event's questions."""

    id: int
    event_id: int
    name: str
    type: str
    choices: list[str] | None
    position: int


Option = TypeVar("Option", bound=OptionRow)


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


class OptionKind(Generic[Option]):
    """The options of one form: `model` is their table, `answers` the table of the answers
    given to them (with an `option_id` column). Audit events are `<target_type>.created`,
    `.updated` and `.deleted`; `answered_by` says who answers them, in a message."""

    def __init__(
        self, model: type[Option], answers: type[Any], *, target_type: str, answered_by: str
    ) -> None:
        self.model = model
        self.answers = answers
        self.target_type = target_type
        self.answered_by = answered_by
        self._parse_name = text(table_of(model).c.name, nonempty=True)

    # --- reading --------------------------------------------------------------------------

    def of_event(self, session: Session, event_id: int) -> list[Option]:
        """The event's options in the order its form asks them."""
        model: Any = self.model
        return list(
            session.scalars(
                select(model).where(model.event_id == event_id).order_by(model.position, model.id)
            )
        )

    def find_current(self, session: Session, option_id: int) -> Option | None:
        """The current event's option with this id (options of past events are not edited)."""
        model: Any = self.model
        found: Option | None = session.scalars(
            select(model)
            .join(Event, Event.id == model.event_id)
            .where(model.id == option_id, Event.is_current.is_(True))
        ).first()
        return found

    def answer_counts(self, session: Session, option_ids: list[int]) -> dict[int, int]:
        """How many answered each of these options."""
        if not option_ids:
            return {}
        answers: Any = self.answers
        rows = session.execute(
            select(answers.option_id, func.count().label("answers"))
            .where(answers.option_id.in_(option_ids))
            .group_by(answers.option_id)
        )
        return {row.option_id: row.answers for row in rows}

    # --- writing --------------------------------------------------------------------------

    def create(self, session: Session, actor: Actor, spec: OptionSpec) -> Option:
        """A new option of the current event (made if need be), by default asked last."""
        model: Any = self.model
        event = current_event_for_writing(session)
        checked = self._check(session, event.id, spec, None)
        position = checked.position
        if position is None:
            last = session.scalar(
                select(func.max(model.position)).where(model.event_id == event.id)
            )
            # In steps of ten, leaving room to put an option between two others later.
            position = min(
                (last or 0) // POSITION_STEP * POSITION_STEP + POSITION_STEP, POSITION_MAX
            )
        option: Option = model(
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
            f"{self.target_type}.created",
            target_type=self.target_type,
            target_id=option.id,
            details={"event": event.id, "name": option.name, "type": option.type},
        )
        return option

    def update(self, session: Session, actor: Actor, option: Option, spec: OptionSpec) -> None:
        """Saves the organizer's changes; the type stays while the option has answers."""
        checked = self._check(session, option.event_id, spec, option.id)
        if checked.type != option.type and self.answer_counts(session, [option.id]):
            problem = f"{self.answered_by} have answered this option, so its type cannot change."
            raise Invalid({"type": problem})
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
            action=f"{self.target_type}.updated",
            target_type=self.target_type,
            key="changed",
        )

    def delete(self, session: Session, actor: Actor, option: Option) -> int:
        """Deletes the option and every answer to it; how many answers went with it."""
        model: Any = self.model
        answers: Any = self.answers
        count = self.answer_counts(session, [option.id]).get(option.id, 0)
        session.execute(delete(answers).where(answers.option_id == option.id))
        session.execute(delete(model).where(model.id == option.id))
        record_event(
            session,
            actor,
            f"{self.target_type}.deleted",
            target_type=self.target_type,
            target_id=option.id,
            details={"name": option.name, "answers": count},
        )
        return count

    def _check(
        self, session: Session, event_id: int, spec: OptionSpec, option_id: int | None
    ) -> _Checked:
        """The option's values, or Invalid naming each bad field (name, type, choices,
        position)."""
        errors: dict[str, str] = {}
        name = kind = ""
        try:
            name = self._parse_name(spec.name.strip())
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
                errors["position"] = (
                    f"The position must be a whole number from 0 to {POSITION_MAX}."
                )
            else:
                position = int(digits)
        if name and "name" not in errors:
            model: Any = self.model
            taken = session.scalar(
                select(model.id).where(
                    model.event_id == event_id, model.name == name, model.id != (option_id or 0)
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


# --- answers as a form sends them ----------------------------------------------------------


def answer_from_form(option_type: str, choices: list[str] | None, values: list[str]) -> Any:
    """The stored value of an option's answer (None: not answered) from the values a form
    sent for it, or ValueError saying why it does not fit (api.md 2.5, Option: a number, a
    string, or an array of strings). A multi without choices takes one answer per line."""
    given: Any
    if option_type == OptionType.MULTI:
        if choices is None:  # any values: one per line of a text box
            values = [line for value in values for line in value.splitlines()]
        given = list(dict.fromkeys(value.strip() for value in values if value.strip()))
        if not given:
            return None
        if len(given) > MULTI_ANSWER_MAX:
            raise ValueError(f"Give at most {MULTI_ANSWER_MAX} answers.")
        if any(len(value) > CHOICE_MAX_LENGTH for value in given):
            raise ValueError(f"Each answer may be at most {CHOICE_MAX_LENGTH} characters long.")
    else:
        present = [value.strip() for value in values if value.strip()]
        if not present:
            return None
        if len(present) > 1:
            raise ValueError("Give one answer.")
        given = present[0]
        if option_type == OptionType.NUMBER:
            given = _number(given)
        elif len(given) > TEXT_ANSWER_MAX:
            raise ValueError(f"The answer may be at most {TEXT_ANSWER_MAX} characters long.")
    problem = option_value_error(option_type, choices, given)
    if problem:
        if choices is not None and option_type in TYPES_WITH_CHOICES:
            raise ValueError("Choose among the choices given.")
        raise ValueError(f"The answer {problem}.")
    return given


def _number(typed: str) -> int | float:
    """A whole number stays whole (12, not 12.0) in the record."""
    message = "Enter a number, such as 12 or 7.5."
    if len(typed) > NUMBER_TEXT_MAX:
        raise ValueError(message)
    try:
        number: int | float = int(typed)
    except ValueError:
        try:
            number = float(typed)
        except ValueError:
            raise ValueError(message) from None
        if not math.isfinite(number):
            raise ValueError(message) from None
        if number.is_integer():
            number = int(number)
    if abs(number) > NUMBER_MAX:
        raise ValueError(f"Enter a number between -{NUMBER_MAX:,} and {NUMBER_MAX:,}.")
    return number
