"""The volunteer record of api.md 2.5, and the volunteer search request (api.md 4.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from regdesk.formats import format_timestamp
from regdesk.schemas import PageRequest, Record
from regdesk.users.schemas import NestedUser, render_nested_user
from regdesk.volunteers.models import DepartmentState


class ContactMethod(Record):
    name: str
    isPrimary: bool = Field(description="The preferred way to reach the volunteer.")
    value: str


class DepartmentAssignment(Record):
    id: str
    name: str
    states: list[DepartmentState]


class Option(Record):
    name: str
    type: Literal["select", "multi", "text", "number"]
    value: float | str | list[str]


class VolunteerUser(NestedUser):
    isStaff: bool = Field(description="The user holds a role flagged as staff.")


class Volunteer(Record):
    createdAt: str = Field(examples=["2026-07-04T18:30:00.000Z"])
    updatedAt: str
    contactMethods: list[ContactMethod]
    departments: list[DepartmentAssignment]
    user: VolunteerUser
    options: list[Option]


class VolunteerPage(Record):
    data: list[Volunteer]
    nextPage: str | None
    hasMore: bool


class VolunteerSearch(PageRequest):
    pass


def render_volunteer(
    row: Any,
    contact_methods: Sequence[Any],
    departments: Sequence[tuple[Any, list[str]]],
    options: Sequence[Any],
    is_staff: bool,
) -> dict[str, Any]:
    """api.md 2.5 from a volunteer row joined with its user's columns."""
    return {
        "createdAt": format_timestamp(row.volunteer_created_at),
        "updatedAt": format_timestamp(row.volunteer_updated_at),
        "contactMethods": [
            {"name": c.name, "isPrimary": c.is_primary, "value": c.value} for c in contact_methods
        ],
        "departments": [
            {"id": str(d.department_id), "name": d.name, "states": states}
            for d, states in departments
        ],
        "user": {**render_nested_user(row), "isStaff": is_staff},
        "options": [{"name": o.name, "type": o.type, "value": o.value} for o in options],
    }
