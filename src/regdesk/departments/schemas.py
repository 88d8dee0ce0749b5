"""The department record of api.md 2.6."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from regdesk.schemas import Record
from regdesk.users.schemas import NestedUser, render_nested_user


class Department(Record):
    id: str = Field(examples=["3"])
    name: str
    email: str
    publiclyVisible: bool = Field(description="Shown to everyone applying to volunteer.")
    leads: list[NestedUser]


def render_department(row: Any, leads: Sequence[Any]) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "name": row.name,
        "email": row.email,
        "publiclyVisible": row.publicly_visible,
        "leads": [render_nested_user(lead) for lead in leads],
    }
