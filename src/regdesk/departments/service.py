"""Departments and their leads for the organizers' pages, and their changes (the API's
records are regdesk.departments.records)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import table_of
from regdesk.departments.models import Department, DepartmentLead
from regdesk.errors import Invalid
from regdesk.fields import text
from regdesk.users.fields import normalize_email
from regdesk.users.models import User
from regdesk.users.service import find_by_login

DEPARTMENTS = table_of(Department)
# The import's rules for these fields (transfer/validation.py), so both refuse the same input.
_NAME = text(DEPARTMENTS.c.name, nonempty=True)
_EMAIL = text(DEPARTMENTS.c.email, normalize=normalize_email)


def departments_with_leads(
    session: Session, only: frozenset[int] | None = None
) -> list[tuple[Department, list[User]]]:
    """Departments by name (all, or those with ids in `only`), each with its leads."""
    chosen = select(Department).order_by(Department.name)
    if only is not None:
        chosen = chosen.where(Department.id.in_(only))
    departments = list(session.scalars(chosen))
    leads: dict[int, list[User]] = defaultdict(list)
    for department_id, user in session.execute(
        select(DepartmentLead.department_id, User)
        .join(User, User.id == DepartmentLead.user_id)
        .where(DepartmentLead.department_id.in_([d.id for d in departments]))
        .order_by(User.username)
    ):
        leads[department_id].append(user)
    return [(department, leads[department.id]) for department in departments]


def led_department_ids(session: Session, user_id: int) -> frozenset[int]:
    """The ids of the departments this user leads."""
    return frozenset(
        session.scalars(
            select(DepartmentLead.department_id).where(DepartmentLead.user_id == user_id)
        )
    )


def departments_led_by(session: Session, user_id: int) -> list[Department]:
    """The departments this user leads, by name."""
    return list(
        session.scalars(
            select(Department)
            .join(DepartmentLead, DepartmentLead.department_id == Department.id)
            .where(DepartmentLead.user_id == user_id)
            .order_by(Department.name)
        )
    )


def leads_of(session: Session, department_id: int) -> list[User]:
    return list(
        session.scalars(
            select(User)
            .join(DepartmentLead, DepartmentLead.user_id == User.id)
            .where(DepartmentLead.department_id == department_id)
            .order_by(User.username)
        )
    )


# --- the organizers' changes (admin pages) ----------------------------------------------------


def _checked(errors: dict[str, str], key: str, parse: Any, value: str) -> Any:
    try:
        return parse(value)
    except ValueError as exc:
        errors[key] = str(exc)
        return None


def _check_name_free(
    session: Session, errors: dict[str, str], name: str, department_id: int | None
) -> None:
    """Names are unique; compared whatever their case, so "security" is not a second one."""
    holder = session.scalar(
        select(Department.id).where(func.lower(Department.name) == func.lower(name))
    )
    if holder is not None and holder != department_id:
        errors["name"] = f"there is already a department named {name!r}"


def create_department(
    session: Session, actor: Actor, *, name: str, email: str, publicly_visible: bool
) -> Department:
    errors: dict[str, str] = {}
    name = _checked(errors, "name", _NAME, name.strip())
    email = _checked(errors, "email", _EMAIL, email.strip())
    if name:
        _check_name_free(session, errors, name, None)
    if errors:
        raise Invalid(errors)
    department = Department(name=name, email=email, publicly_visible=publicly_visible)
    session.add(department)
    session.flush()
    record_event(
        session,
        actor,
        "department.created",
        target_type="department",
        target_id=department.id,
        details={"name": name, "publiclyVisible": publicly_visible},
    )
    return department


def update_department(
    session: Session,
    actor: Actor,
    department: Department,
    *,
    name: str | None = None,
    email: str | None = None,
    publicly_visible: bool | None = None,
) -> list[str]:
    """Changes the fields given (None: left alone); returns the API names of those changed."""
    errors: dict[str, str] = {}
    changes: dict[str, Any] = {}
    if name is not None:
        name = _checked(errors, "name", _NAME, name.strip())
        if name and name != department.name:
            _check_name_free(session, errors, name, department.id)
            changes["name"] = name
    if email is not None:
        email = _checked(errors, "email", _EMAIL, email.strip())
        if email and email != department.email:
            changes["email"] = email
    if publicly_visible is not None and publicly_visible != department.publicly_visible:
        changes["publicly_visible"] = publicly_visible
    if errors:
        raise Invalid(errors)
    return record_changes(
        session,
        actor,
        department,
        changes,
        action="department.updated",
        target_type="department",
        names=_API_NAMES,
    )


_API_NAMES = {"name": "name", "email": "email", "publicly_visible": "publiclyVisible"}


def add_lead(session: Session, actor: Actor, department: Department, login: str) -> User:
    """Makes the user with this username (or e-mail) a lead; idempotent."""
    user = find_by_login(session, login.strip()) if login.strip() else None
    if user is None:
        raise Invalid({"username": f"no user has the username or e-mail {login.strip()!r}"})
    if session.get(DepartmentLead, (department.id, user.id)) is None:
        session.add(DepartmentLead(department_id=department.id, user_id=user.id))
        session.flush()
        record_event(
            session,
            actor,
            "department.lead_added",
            target_type="department",
            target_id=department.id,
            details={"user_id": user.id, "username": user.username},
        )
    return user


def remove_lead(session: Session, actor: Actor, department: Department, user_id: int) -> bool:
    result = session.execute(
        delete(DepartmentLead).where(
            DepartmentLead.department_id == department.id, DepartmentLead.user_id == user_id
        )
    )
    removed = bool(getattr(result, "rowcount", 0))
    if removed:
        record_event(
            session,
            actor,
            "department.lead_removed",
            target_type="department",
            target_id=department.id,
            details={"user_id": user_id},
        )
    return removed
