"""A CSV of users, read into the import document's shape (`{"users": [...]}`).

Columns are the JSON user fields, with the address flattened: username, email, firstName,
lastName, preferredName, phone, verified, password (or passwordHash), bornAt, newsletter,
identityVerified, profilePictureUrl, addressLine1, addressLine2, addressCity, addressState,
addressZipcode, addressCountry, roles, permissions, and optionally id, createdAt, updatedAt.
Any subset may appear, in any order.

- An empty cell is an absent field: a new user gets the default, a matched one keeps its value.
- The six address cells make one address: null when all are empty (absent when the columns
  are), else an object whose empty cells are null.
- Booleans: true/false, yes/no, 1/0 (any case). Anything else is reported by validation.
- roles and permissions: separated by `;`. A role is `Staff` (scope convention) or
  `Staff:global` / `Staff:convention`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from regdesk.transfer.document import (
    ADDRESS_COLUMNS,
    USER_KEYS,
    Errors,
    ImportRejected,
    SourcedDocument,
)

COLUMNS = frozenset((USER_KEYS - {"address"}) | set(ADDRESS_COLUMNS))
BOOLEAN_COLUMNS = frozenset({"verified", "newsletter", "identityVerified"})
BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
ROLE_SCOPES = ("convention", "global")


def read_users_csv(path: Path) -> SourcedDocument:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            return _read(csv.reader(handle))
    except UnicodeDecodeError:
        raise ImportRejected([(str(path), "is not UTF-8 text")]) from None
    except OSError as exc:
        raise ImportRejected([(str(path), f"cannot be read: {exc}")]) from None


def parse_users_csv(content: str) -> SourcedDocument:
    """The same, from text already read (an uploaded file)."""
    return _read(csv.reader(io.StringIO(content, newline="")))


def _read(reader: Any) -> SourcedDocument:
    try:
        header = [name.strip() for name in next(reader, [])]
        _check_header(header)
        users: list[dict[str, Any]] = []
        labels: list[str] = []
        errors = Errors()
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue  # a blank line, as spreadsheets leave at the end
            label = f"users[{len(users)}] (CSV line {reader.line_num})"
            if len(cells) > len(header):
                errors.add(label, f"has {len(cells)} cells but the header {len(header)} columns")
            users.append(_user(dict(zip(header, cells, strict=False))))
            labels.append(label)
    except csv.Error as exc:
        raise ImportRejected([(f"CSV line {reader.line_num}", str(exc))]) from None
    errors.raise_if_any()
    return SourcedDocument({"users": users}, {"users": labels})


def _check_header(header: list[str]) -> None:
    errors = Errors()
    if not header:
        errors.add("CSV line 1", "the file is empty (the first line names the columns)")
    for name in dict.fromkeys(header):
        if name not in COLUMNS:
            expected = ", ".join(sorted(COLUMNS))
            errors.add("CSV line 1", f"unknown column {name!r} (expected some of {expected})")
        elif header.count(name) > 1:
            errors.add("CSV line 1", f"column {name!r} appears twice")
    errors.raise_if_any()


def _user(row: dict[str, str]) -> dict[str, Any]:
    user: dict[str, Any] = {}
    for name, cell in row.items():
        if name in ADDRESS_COLUMNS or cell == "":
            continue
        if name in BOOLEAN_COLUMNS:
            user[name] = BOOLEANS.get(cell.strip().lower(), cell)
        elif name == "roles":
            user[name] = [_role(entry) for entry in _entries(cell)]
        elif name == "permissions":
            user[name] = _entries(cell)
        else:
            user[name] = cell
    address = {key: row[key] or None for key in ADDRESS_COLUMNS if key in row}
    if address:
        user["address"] = address if any(address.values()) else None
    return user


def _entries(cell: str) -> list[str]:
    return [entry.strip() for entry in cell.split(";") if entry.strip()]


def _role(entry: str) -> str | dict[str, str]:
    name, _, scope = entry.rpartition(":")
    if name and scope in ROLE_SCOPES:
        return {"name": name, "scope": scope}
    return entry
