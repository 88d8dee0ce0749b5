"""Departments and their leads."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.departments.models import Department, DepartmentLead
from regdesk.departments.schemas import render_department
from regdesk.users.models import User


def list_departments(session: Session) -> list[dict[str, Any]]:
    """Every department, visible or not, with its leads: two queries whatever the count."""
    departments = session.execute(select(Department.__table__).order_by(Department.id)).all()
    leads: dict[int, list[Any]] = defaultdict(list)
    for lead in session.execute(
        select(DepartmentLead.department_id, User.__table__)
        .join(User, User.id == DepartmentLead.user_id)
        .order_by(DepartmentLead.department_id, User.id)
    ):
        leads[lead.department_id].append(lead)
    return [render_department(row, leads[row.id]) for row in departments]
