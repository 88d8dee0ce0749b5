"""Reading one object of the document: typed fields (regdesk.fields' parsers), each error
noted at its position (`users[3].phone: '12' is not a possible phone number`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from regdesk.fields import Parser, describe
from regdesk.transfer.document import Errors, record_label


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
