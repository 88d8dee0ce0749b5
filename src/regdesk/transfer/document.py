"""The import/export document: its field names, value formats and errors (operator.md).

One place says how a document key maps to a column and how values are written, so that the
importer reads exactly what the exporter writes.
"""

from __future__ import annotations

from typing import Any

# Document key -> users column, for the fields that are plain values on the row.
USER_COLUMNS: dict[str, str] = {
    "username": "username",
    "email": "email",
    "firstName": "first_name",
    "lastName": "last_name",
    "preferredName": "preferred_name",
    "phone": "phone",
    "verified": "verified",
    "bornAt": "born_at",
    "newsletter": "newsletter",
    "identityVerified": "identity_verified",
    "profilePictureUrl": "profile_picture_url",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}
ADDRESS_COLUMNS: dict[str, str] = {
    "addressLine1": "address_line1",
    "addressLine2": "address_line2",
    "addressCity": "address_city",
    "addressState": "address_state",
    "addressZipcode": "address_zipcode",
    "addressCountry": "address_country",
}
USER_KEYS = frozenset(
    {*USER_COLUMNS, "id", "password", "passwordHash", "address", "roles", "permissions"}
)
ROLE_KEYS = frozenset({"id", "name", "staff"})
DEPARTMENT_KEYS = frozenset({"id", "name", "email", "publiclyVisible", "leads"})
EVENT_KEYS = frozenset({"name", "startsOn", "endsOn", "current", "options"})
EVENT_OPTION_KEYS = frozenset({"name", "type", "choices"})
VOLUNTEER_KEYS = frozenset(
    {"user", "contactMethods", "departments", "options", "createdAt", "updatedAt"}
)
CONTACT_METHOD_KEYS = frozenset({"name", "isPrimary", "value"})
ASSIGNMENT_KEYS = frozenset({"name", "states"})
VOLUNTEER_OPTION_KEYS = frozenset({"name", "type", "value"})
PRODUCT_KEYS = frozenset(
    {
        "id",
        "name",
        "displayName",
        "description",
        "price",
        "capacity",
        "opensAt",
        "closesAt",
        "public",
        "position",
    }
)
REGISTRATION_FLAG_KEYS = frozenset({"id", "shortName"})
REGISTRATION_OPTION_KEYS = EVENT_OPTION_KEYS
REGISTRATION_KEYS = frozenset(
    {
        "id",
        "user",
        "product",
        "orderId",
        "status",
        "amount",
        "currency",
        "paymentMethod",
        "paymentReference",
        "paidAt",
        "badgeName",
        "ticketCode",
        "checkedInAt",
        "checkedInBy",
        "options",
        "flags",
        "createdAt",
        "updatedAt",
    }
)
# registrations.md, Operator interface: the current event's products, flags, registration
# options and registrations.
SALES_SECTIONS = ("products", "registrationFlags", "registrationOptions", "registrations")
SECTIONS = ("event", "roles", "users", "departments", "volunteers", *SALES_SECTIONS)

MAX_ERRORS = 100


class ImportRejected(Exception):
    """A document that cannot be imported; `errors` names each bad field by its position.

    A position reads like `users[3].phone` or `volunteers[0].departments[1].states[0]`.
    """

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__(errors)
        self.errors = errors

    def __str__(self) -> str:
        return "\n".join(f"{position}: {message}" for position, message in self.errors)


class Errors:
    """Collects a document's errors, keeping the first MAX_ERRORS so a report stays readable."""

    def __init__(self) -> None:
        self.found: list[tuple[str, str]] = []
        self.dropped = 0

    def add(self, position: str, message: str) -> None:
        if len(self.found) < MAX_ERRORS:
            self.found.append((position, message))
        else:
            self.dropped += 1

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_if_any(self) -> None:
        if not self.found:
            return
        errors = list(self.found)
        if self.dropped:
            errors.append(("document", f"and {self.dropped} more errors not shown"))
        raise ImportRejected(errors)


class SourcedDocument(dict[str, Any]):
    """A document read from a file whose records have better names than their index.

    A CSV's `users[3]` is easier to find as `users[3] (CSV line 5)`.
    """

    def __init__(self, content: dict[str, Any], labels: dict[str, list[str]]) -> None:
        super().__init__(content)
        self.labels = labels


def record_label(document: dict[str, Any], section: str, index: int) -> str:
    labels = getattr(document, "labels", {}).get(section)
    if labels and index < len(labels):
        return str(labels[index])
    return f"{section}[{index}]"
