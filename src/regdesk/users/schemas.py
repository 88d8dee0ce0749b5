"""The user records of api.md 2.2 and 2.3, and the user search request (api.md 4.7).

The pydantic models describe the records in the OpenAPI document and in tests; the render
functions build them from rows, the one place each shape is assembled.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictInt, StrictStr

from regdesk.formats import format_date_as_timestamp
from regdesk.schemas import PageRequest, Record
from regdesk.users.fields import shown_picture_url

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


class UserRoleName(Record):
    id: int
    name: str


class CurrentUser(Record):
    """api.md 2.4 with decisions.md's extras. `email`, `phone` and the six `address*` fields are
    present only with the scopes pii:email, pii:phone and pii:address."""

    id: int
    sub: str
    username: str
    firstName: str
    lastName: str
    preferredName: str | None
    email: str | None = Field(default=None, description="Only with pii:email.")
    emailVerified: bool
    phone: str | None = Field(default=None, description="E.164. Only with pii:phone.")
    addressLine1: str | None = Field(default=None, description="Only with pii:address.")
    addressLine2: str | None = Field(default=None, description="Only with pii:address.")
    addressCity: str | None = Field(default=None, description="Only with pii:address.")
    addressState: str | None = Field(default=None, description="Only with pii:address.")
    addressZipcode: str | None = Field(default=None, description="Only with pii:address.")
    addressCountry: str | None = Field(default=None, description="Only with pii:address.")
    bornAt: str | None = Field(description="ISO-8601 timestamp, midnight UTC.")
    newsletter: bool
    identityVerified: bool
    isVolunteer: bool
    isDepartmentLead: bool
    userRoles: list[UserRoleName]
    permissions: list[str]
    profilePictureUrl: str | None


def render_current_user(
    row: Any,
    scopes: frozenset[str],
    *,
    is_volunteer: bool,
    is_department_lead: bool,
    roles: list[dict[str, Any]],
    permissions: list[str],
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": row.id,
        "sub": str(row.id),
        "username": row.username,
        "firstName": row.first_name,
        "lastName": row.last_name,
        "preferredName": row.preferred_name,
    }
    if "pii:email" in scopes:
        record["email"] = row.email
    record["emailVerified"] = row.verified
    if "pii:phone" in scopes:
        record["phone"] = row.phone
    if "pii:address" in scopes:
        record.update({name: getattr(row, column) for name, column in ADDRESS_FIELDS})
    record.update(
        bornAt=format_date_as_timestamp(row.born_at) if row.born_at else None,
        newsletter=row.newsletter,
        identityVerified=row.identity_verified,
        isVolunteer=is_volunteer,
        isDepartmentLead=is_department_lead,
        userRoles=roles,
        permissions=permissions,
        profilePictureUrl=shown_picture_url(row.profile_picture_url),
    )
    return record
