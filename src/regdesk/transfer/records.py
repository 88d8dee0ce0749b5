"""Reading one object of the document: typed fields (regdesk.fields' parsers), each error
noted at its position (`users[3].phone: '12' is not a possible phone number`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from regdesk.events.models import OptionType, option_value_error
from regdesk.fields import Parser, array, describe, one_of, record_id, text
from regdesk.transfer.document import VOLUNTEER_OPTION_KEYS, Errors, record_label
from regdesk.transfer.existing import Row, event_options


class Record:
    """One object of the document: reads its fields, noting each error at its position."""

    def __init__(self, errors: Errors, label: str, raw: Any, allowed: frozenset[str]) -> None:
        self.errors = errors
        self.label = label
        self.ok = isinstance(raw, dict)
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.values: dict[str, Any] = {}
        if not self.ok:
            errors.add(label, f"must be an object, not {describe(raw)}")
        for key in self.raw:
            if key not in allowed:
                self.error(key, f"unknown field (expected one of {', '.join(sorted(allowed))})")

    def error(self, key: str, message: str) -> None:
        self.errors.add(f"{self.label}.{key}", message)

    def child(self, key: str, raw: Any, allowed: frozenset[str]) -> Record:
        return Record(self.errors, f"{self.label}.{key}", raw, allowed)

    def require(self, *keys: str) -> None:
        for key in keys:
            if key not in self.raw:
                self.error(key, "is required")

    def get(self, key: str, parse: Parser, *, nullable: bool = False) -> Any:
        """The parsed value; None when it is absent, null or bad (bad ones are noted)."""
        return self._parse(key, parse, nullable)[1] if key in self.raw else None

    def column(self, key: str, column: str, parse: Parser, *, nullable: bool = False) -> None:
        """Sets values[column] when the field is present and good."""
        if key in self.raw:
            ok, value = self._parse(key, parse, nullable)
            if ok:
                self.values[column] = value

    def _parse(self, key: str, parse: Parser, nullable: bool) -> tuple[bool, Any]:
        value = self.raw[key]
        if value is None:
            if not nullable:
                self.error(key, "may not be null")
            return nullable, None
        try:
            return True, parse(value)
        except ValueError as exc:
            self.error(key, str(exc))
            return False, None


def section(document: dict[str, Any], name: str, errors: Errors) -> list[Any]:
    value = document.get(name, [])
    if not isinstance(value, list):
        errors.add(name, f"must be an array, not {describe(value)}")
        return []
    return value


def records(
    document: dict[str, Any], name: str, errors: Errors, allowed: frozenset[str]
) -> Iterator[Record]:
    """The objects of a section (bad ones are noted and skipped)."""
    for index, raw in enumerate(section(document, name, errors)):
        record = Record(errors, record_label(document, name, index), raw, allowed)
        if record.ok:
            yield record


# --- rules every section shares --------------------------------------------------------------


def once(record: Record, key: str, value: Any, seen: dict[Any, str], what: str) -> None:
    """Notes a value the document may hold only once (a username, a name, an id)."""
    first = seen.setdefault(value, record.label)
    if first != record.label:
        record.error(key, f"{what} {value!r} is also in {first}")


def check_id(
    record: Record, stored: Row | None, holders: dict[int, str], seen: dict[Any, str], kind: str
) -> int | None:
    """The explicit id a new record asks for; a matched record must already have it."""
    wanted = record.get("id", record_id)
    if wanted is None:
        return None
    once(record, "id", wanted, seen, "id")
    if stored is not None:
        if stored["id"] != wanted:
            record.error("id", f"is {wanted}, but this {kind} already has id {stored['id']}")
        return None
    if wanted in holders:
        record.error("id", f"{wanted} is taken by {kind} {holders[wanted]!r}")
    return int(wanted)


# --- options and their answers (an event's volunteer options, its registration options) -----


@dataclass
class OptionSpec:
    name: str
    type: str
    choices: list[str] | None


def option_choices(value: Any) -> list[str]:
    items = array(value)
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise ValueError(f"item {index} must be a non-empty string, not {describe(item)}")
        if item in items[:index]:
            raise ValueError(f"{item!r} is listed twice")
    return items


def declare_option(
    option: Record, catalogue: dict[str, OptionSpec], declared: dict[Any, str], what: str
) -> None:
    """An option the document declares ({"name", "type", "choices"}) into the catalogue of
    those the event will have: a stored one keeps its type and takes the choices given."""
    option.require("name", "type")
    name = option.get("name", text(event_options.c.name, nonempty=True))
    kind = option.get("type", one_of(OptionType))
    choices = option.get("choices", option_choices, nullable=True)
    if name is None or kind is None:
        return
    once(option, "name", name, declared, "option")
    if choices is not None and kind not in (OptionType.SELECT, OptionType.MULTI):
        option.error("choices", "only select and multi options have choices")
    known = catalogue.get(name)
    if known is not None and known.type != kind:
        option.error("type", f"is {kind!r}, but {what} {name!r} is {known.type!r}")
    elif known is None or "choices" in option.raw:
        catalogue[name] = OptionSpec(name, kind, choices)


def check_option_answers(
    record: Record, catalogue: dict[str, OptionSpec], what: str = "the event's option"
) -> dict[str, Any] | None:
    """Option values; an option the event does not define yet is added to it."""
    items = record.get("options", array)
    if items is None:
        return None
    answers: dict[str, Any] = {}
    for index, item in enumerate(items):
        answer = record.child(f"options[{index}]", item, VOLUNTEER_OPTION_KEYS)
        answer.require("name", "type", "value")
        name = answer.get("name", text(event_options.c.name, nonempty=True))
        kind = answer.get("type", one_of(OptionType))
        if name is None or kind is None or "value" not in answer.raw:
            continue
        option = catalogue.setdefault(name, OptionSpec(name, kind, None))
        if option.type != kind:
            answer.error("type", f"is {kind!r}, but {what} {name!r} is {option.type!r}")
            continue
        problem = option_value_error(kind, option.choices, answer.raw["value"])
        if problem:
            answer.error("value", problem)
        elif name in answers:
            answer.error("name", f"option {name!r} is answered twice")
        answers[name] = answer.raw["value"]
    return answers
