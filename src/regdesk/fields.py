"""Rules for the values people and documents give, shared by every writer (the import, the
admin pages, the command line, the API): each parser takes a value and returns the form it is
stored in, or raises ValueError with a message that reads after the field's name
(`users[3].phone: '12' is not a possible phone number`). Rules of a resource's own fields
(e-mail, phone, username...) are its package's (users/fields.py).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from sqlalchemy import Column

from regdesk.db import ID_MAX
from regdesk.formats import parse_date, parse_timestamp
from regdesk.security import is_password_hash

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
