"""Reading one object of the document: typed fields, each error noted at its position.

A parser takes a JSON value and returns the stored form, or raises ValueError with a message
that reads after the field's position (`users[3].phone: '12' is not a possible phone number`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Any

from sqlalchemy import Column

from regdesk.db import ID_MAX
from regdesk.security import is_password_hash
from regdesk.transfer.document import Errors, parse_date, parse_timestamp, record_label

Parser = Callable[[Any], Any]

PASSWORD_MAX = 1024


def describe(value: Any) -> str:
    """The JSON type of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def max_length(column: Column[Any]) -> int:
    """The models are the one source of truth for how long a string may be."""
    length = getattr(column.type, "length", None)
    assert isinstance(length, int)
    return length


def text(
    column: Column[Any], *, normalize: Callable[[str], str] | None = None, nonempty: bool = False
) -> Parser:
    limit = max_length(column)

    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, not {describe(value)}")
        result = value if normalize is None else normalize(value)
        if nonempty and not result.strip():
            raise ValueError("may not be empty")
        if len(result) > limit:
            raise ValueError(f"is longer than {limit} characters")
        return result

    return parse


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {describe(value)}")
    return value


def record_id(value: Any) -> int:
    """A positive integer; also the API's decimal-string form ("17")."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ID_MAX:
        raise ValueError(f"must be a positive integer, not {describe(value)}")
    return value


def timestamp(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(
            f"must be a timestamp such as 2026-07-04T18:30:00.000Z, not {describe(value)}"
        )
    return parse_timestamp(value)


def date(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"must be a date such as 1990-01-01, not {describe(value)}")
    return parse_date(value)


def array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"must be an array, not {describe(value)}")
    return value


def one_of(choices: type[StrEnum]) -> Parser:
    allowed = [member.value for member in choices]

    def parse(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return str(value)

    return parse


def password_hash(value: Any) -> str:
    if not isinstance(value, str) or not is_password_hash(value) or len(value) > 200:
        raise ValueError("must be an argon2 hash ($argon2id$...)")
    return value


def password(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > PASSWORD_MAX:
        raise ValueError(f"must be a string of 1 to {PASSWORD_MAX} characters")
    return value


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
