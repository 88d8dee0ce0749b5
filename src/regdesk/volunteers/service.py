"""Volunteer applications of the current event, read a page at a time.

A page costs the same few queries whatever its size or depth: the volunteers with their users
(keyset on ix_volunteers_event_id_id), then the contact methods, department states, options
and staff flags of the whole page, each in one query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from regdesk.departments.models import Department
from regdesk.events.models import Event, EventOption
from regdesk.roles.models import Role, UserRole
from regdesk.users.models import User
from regdesk.volunteers.models import (
    STATE_ORDER,
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)
from regdesk.volunteers.schemas import render_volunteer

VOLUNTEER_WITH_USER = (
    select(
        Volunteer.id.label("volunteer_id"),
        Volunteer.created_at.label("volunteer_created_at"),
        Volunteer.updated_at.label("volunteer_updated_at"),
        User.__table__,
    )
    .join(User, User.id == Volunteer.user_id)
    .order_by(Volunteer.id)
)


def current_event_id(session: Session) -> int | None:
    return session.scalar(select(Event.id).where(Event.is_current.is_(True)))


def volunteer_page(
    session: Session, after_id: int, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of the current event's volunteers after `after_id`, and the id to continue after
    when more follow."""
    event_id = current_event_id(session)
    if event_id is None:
        return [], None
    rows = session.execute(
        VOLUNTEER_WITH_USER.where(Volunteer.event_id == event_id, Volunteer.id > after_id).limit(
            limit + 1
        )
    ).all()
    page = rows[:limit]
    return _records(session, page), (page[-1].volunteer_id if len(rows) > limit else None)


def volunteer_of_user(session: Session, user_id: int) -> dict[str, Any] | None:
    """The user's application for the current event, if any."""
    event_id = current_event_id(session)
    if event_id is None:
        return None
    row = session.execute(
        VOLUNTEER_WITH_USER.where(Volunteer.event_id == event_id, Volunteer.user_id == user_id)
    ).first()
    return _records(session, [row])[0] if row is not None else None


def _records(session: Session, rows: Sequence[Row[Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    ids = [row.volunteer_id for row in rows]
    contacts = _grouped(
        session.execute(
            select(VolunteerContactMethod)
            .where(VolunteerContactMethod.volunteer_id.in_(ids))
            .order_by(VolunteerContactMethod.volunteer_id, VolunteerContactMethod.position)
        ).scalars()
    )
    options = _grouped(
        session.execute(
            select(
                VolunteerOptionValue.volunteer_id,
                EventOption.name,
                EventOption.type,
                VolunteerOptionValue.value,
            )
            .join(EventOption, EventOption.id == VolunteerOptionValue.option_id)
            .where(VolunteerOptionValue.volunteer_id.in_(ids))
            .order_by(VolunteerOptionValue.volunteer_id, EventOption.position, EventOption.id)
        )
    )
    departments = _departments(session, ids)
    staff = set(
        session.scalars(
            select(UserRole.user_id)
            .join(Role, Role.id == UserRole.role_id)
            .where(Role.staff.is_(True), UserRole.user_id.in_([row.id for row in rows]))
        )
    )
    return [
        render_volunteer(
            row,
            contacts[row.volunteer_id],
            departments[row.volunteer_id],
            options[row.volunteer_id],
            row.id in staff,
        )
        for row in rows
    ]


def _grouped(rows: Any) -> defaultdict[int, list[Any]]:
    grouped: defaultdict[int, list[Any]] = defaultdict(list)
    for row in rows:
        grouped[row.volunteer_id].append(row)
    return grouped


def _departments(session: Session, ids: list[int]) -> defaultdict[int, list[tuple[Any, list[str]]]]:
    """Per volunteer: (department, states) in department-id order, states in api.md order."""
    result: defaultdict[int, list[tuple[Any, list[str]]]] = defaultdict(list)
    for row in session.execute(
        select(
            VolunteerDepartmentState.volunteer_id,
            VolunteerDepartmentState.department_id,
            Department.name,
            VolunteerDepartmentState.state,
        )
        .join(Department, Department.id == VolunteerDepartmentState.department_id)
        .where(VolunteerDepartmentState.volunteer_id.in_(ids))
        .order_by(VolunteerDepartmentState.volunteer_id, VolunteerDepartmentState.department_id)
    ):
        entries = result[row.volunteer_id]
        if not entries or entries[-1][0].department_id != row.department_id:
            entries.append((row, []))
        entries[-1][1].append(row.state)
    for entries in result.values():
        for _, states in entries:
            states.sort(key=STATE_ORDER.__getitem__)
    return result
