"""Role records (decisions.md, Resources: roles)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from regdesk.schemas import Record


class Role(Record):
    id: str = Field(examples=["3"])
    name: str
    isStaff: bool = Field(description="Holders of this role are staff (`isStaff`).")


class RolePage(Record):
    data: list[Role]
    nextPage: str | None
    hasMore: bool


class UserRole(Record):
    id: str
    name: str
    scope: Literal["convention", "global"]


class UserRoleList(Record):
    data: list[UserRole]


class RoleAssignment(Record):
    scope: Literal["convention", "global"] = Field(
        default="convention", description="For this convention only, or for every one."
    )


def render_role(row: Any) -> dict[str, Any]:
    return {"id": str(row.id), "name": row.name, "isStaff": row.staff}


def render_user_role(row: Any) -> dict[str, Any]:
    return {"id": str(row.id), "name": row.name, "scope": row.scope}
