"""The user records of api.md 2.2 and 2.3, and the user search request (api.md 4.7).

The pydantic models describe the records in the OpenAPI document and in tests; the render
functions build them from rows, the one place each shape is assembled.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictInt, StrictStr

from regdesk.schemas import PageRequest, Record

ADDRESS_FIELDS = (
    ("addressLine1", "address_line1"),
    ("addressLine2", "address_line2"),
    ("addressCity", "address_city"),
    ("addressState", "address_state"),
    ("addressZipcode", "address_zipcode"),
    ("addressCountry", "address_country"),
)


class Address(Record):
    addressLine1: str | None
    addressLine2: str | None
    addressCity: str | None
    addressState: str | None
    addressZipcode: str | None
    addressCountry: str | None = Field(description="ISO 3166-1 alpha-2")


class User(Record):
    """api.md 2.2. A user without address data has `address` with every child null."""

    id: str = Field(examples=["17"])
    email: str
    preferredName: str | None
    firstName: str
    lastName: str
    username: str
    verified: bool
    phone: str | None = Field(description="E.164")
    address: Address


class NestedUser(Record):
    """api.md 2.3: a user inside volunteer and department records."""

    id: str
    firstName: str
    lastName: str
    username: str
    preferredName: str | None
    phone: str | None = Field(description="E.164")
    email: str


class UserPage(Record):
    data: list[User]
    nextPage: str | None
    hasMore: bool


class UserFilter(Record):
    roleId: StrictInt | None = Field(default=None, description="Users holding this role.")
    email: StrictStr | None = Field(default=None, description="Exact, case-insensitive.")
    username: StrictStr | None = Field(default=None, description="Exact.")


class UserSearch(PageRequest):
    filter: UserFilter | None = Field(
        default=None, description="Members combine with AND; an unknown member is a 400."
    )


def render_user(row: Any) -> dict[str, Any]:
    """api.md 2.2 from a row with the users table's columns."""
    return {
        "id": str(row.id),
        "email": row.email,
        "preferredName": row.preferred_name,
        "firstName": row.first_name,
        "lastName": row.last_name,
        "username": row.username,
        "verified": row.verified,
        "phone": row.phone,
        "address": {name: getattr(row, column) for name, column in ADDRESS_FIELDS},
    }


def render_nested_user(row: Any) -> dict[str, Any]:
    """api.md 2.3 from a row with the users table's columns."""
    return {
        "id": str(row.id),
        "firstName": row.first_name,
        "lastName": row.last_name,
        "username": row.username,
        "preferredName": row.preferred_name,
        "phone": row.phone,
        "email": row.email,
    }
