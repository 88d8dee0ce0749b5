"""The current-user record (api.md 2.4): the user's own columns, and what it adds about them
from the rest of the convention (roles, permissions, a volunteer application, leading)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from regdesk.departments.models import DepartmentLead
from regdesk.oauth.permissions import permissions_of
from regdesk.roles.models import Role, UserRole
from regdesk.volunteers.form import current_volunteer_id


def current_user_facts(session: Session | Connection, user_id: int) -> dict[str, Any]:
    """What the current-user record (api.md 2.4) adds to the user's own columns."""
    roles = [
        {"id": role_id, "name": name}
        for role_id, name in session.execute(
            select(Role.id, Role.name)
            .join(UserRole, UserRole.role_id == Role.id)
            .where(UserRole.user_id == user_id)
            .order_by(Role.id)
        )
    ]
    is_volunteer = current_volunteer_id(session, user_id)
    is_lead = session.scalar(
        select(DepartmentLead.department_id).where(DepartmentLead.user_id == user_id).limit(1)
    )
    return {
        "roles": roles,
        "permissions": permissions_of(session, user_id),
        "is_volunteer": is_volunteer is not None,
        "is_department_lead": is_lead is not None,
    }
