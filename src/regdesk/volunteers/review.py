"""Reviewing volunteer applications: administrators see all, a department's leads their
department's, and set the states of a department on an application (assignment, request)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.departments.models import Department
from regdesk.errors import Invalid
from regdesk.events.models import Event, EventOption
from regdesk.events.service import current_event, event_options
from regdesk.users.models import User
from regdesk.volunteers.form import ContactMethod, stored_application
from regdesk.volunteers.models import (
    STATE_ORDER,
    DepartmentState,
    Volunteer,
    VolunteerDepartmentState,
)

SEARCH_MAX = 100
NAME_COLUMNS = (User.first_name, User.last_name, User.preferred_name, User.username)


@dataclass(frozen=True)
class Applicant:
    """One line of the organizers' list of applications."""

    volunteer_id: int
    user: User
    updated_at: dt.datetime
    departments: list[tuple[Department, list[str]]]  # those the organizer may see, with states


@dataclass(frozen=True)
class ApplicantPage:
    applicants: list[Applicant]
    total: int


@dataclass(frozen=True)
class ApplicationDetail:
    volunteer: Volunteer
    user: User
    event: Event
    contact_methods: list[ContactMethod]
    departments: dict[int, list[str]]  # department id -> states, in api.md order
    answers: list[tuple[EventOption, Any]]  # in the order the event asks them


def departments_by_name(session: Session, ids: Iterable[int] | None = None) -> list[Department]:
    """Every department (or those with these ids), by name."""
    query = select(Department).order_by(Department.name, Department.id)
    if ids is not None:
        query = query.where(Department.id.in_(list(ids)))
    return list(session.scalars(query))


def search_applications(
    session: Session,
    *,
    within: frozenset[int] | None,
    department_id: int | None = None,
    state: str | None = None,
    name: str = "",
    offset: int = 0,
    limit: int = 50,
) -> ApplicantPage:
    """The current event's applications, by name. `within`: the departments the organizer
    sees (a lead's), None for all; an application shows when it has a state in one of them,
    and only their states are listed. `department_id` and `state` keep the applications
    holding that state (or any) in that department (or any they see); `name` matches a part
    of the first, last, preferred or user name."""
    event = current_event(session)
    if event is None:
        return ApplicantPage([], 0)
    query = (
        select(Volunteer.id, Volunteer.updated_at, User)
        .join(User, User.id == Volunteer.user_id)
        .where(Volunteer.event_id == event.id)
    )
    if within is not None or department_id is not None or state is not None:
        holds = select(VolunteerDepartmentState.volunteer_id).where(
            VolunteerDepartmentState.volunteer_id == Volunteer.id
        )
        if within is not None:
            holds = holds.where(VolunteerDepartmentState.department_id.in_(sorted(within)))
        if department_id is not None:
            holds = holds.where(VolunteerDepartmentState.department_id == department_id)
        if state is not None:
            holds = holds.where(VolunteerDepartmentState.state == state)
        query = query.where(holds.exists())
    words = name.split()[:5]
    for word in words:
        pattern = "%" + word.lower()[:SEARCH_MAX].replace("\\", "\\\\").replace("%", "\\%")
        pattern = pattern.replace("_", "\\_") + "%"
        query = query.where(
            or_(*(func.lower(column).like(pattern, escape="\\") for column in NAME_COLUMNS))
        )
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.execute(
        query.order_by(
            func.lower(func.coalesce(User.preferred_name, User.first_name)),
            func.lower(User.last_name),
            Volunteer.id,
        )
        .offset(offset)
        .limit(limit)
    ).all()
    states = _states_of(session, [row.id for row in rows], within)
    names = {d.id: d for d in departments_by_name(session, {d for s in states.values() for d in s})}
    return ApplicantPage(
        [
            Applicant(
                row.id,
                row.User,
                row.updated_at,
                [(names[d], held) for d, held in states.get(row.id, {}).items()],
            )
            for row in rows
        ],
        total,
    )


def _states_of(
    session: Session, volunteer_ids: list[int], within: frozenset[int] | None
) -> dict[int, dict[int, list[str]]]:
    """volunteer id -> department id -> states (api.md order), departments by name."""
    if not volunteer_ids:
        return {}
    query = (
        select(
            VolunteerDepartmentState.volunteer_id,
            VolunteerDepartmentState.department_id,
            VolunteerDepartmentState.state,
        )
        .join(Department, Department.id == VolunteerDepartmentState.department_id)
        .where(VolunteerDepartmentState.volunteer_id.in_(volunteer_ids))
        .order_by(Department.name, Department.id)
    )
    if within is not None:
        query = query.where(VolunteerDepartmentState.department_id.in_(sorted(within)))
    found: dict[int, dict[int, list[str]]] = defaultdict(dict)
    for volunteer_id, department_id, state in session.execute(query):
        found[volunteer_id].setdefault(department_id, []).append(state)
    for departments in found.values():
        for held in departments.values():
            held.sort(key=STATE_ORDER.__getitem__)
    return found


def application_detail(session: Session, volunteer_id: int) -> ApplicationDetail | None:
    volunteer = session.get(Volunteer, volunteer_id)
    if volunteer is None:
        return None
    user = session.get(User, volunteer.user_id)
    event = session.get(Event, volunteer.event_id)
    assert user is not None
    assert event is not None
    stored = stored_application(session, volunteer.id)
    options = {option.id: option for option in event_options(session, event.id)}
    return ApplicationDetail(
        volunteer,
        user,
        event,
        stored.contact_methods,
        _states_of(session, [volunteer.id], None).get(volunteer.id, {}),
        [(options[o], stored.answers[o]) for o in options if o in stored.answers],
    )


def set_department_states(
    session: Session, actor: Actor, volunteer: Volunteer, department_id: int, states: set[str]
) -> tuple[list[str], list[str]]:
    """Sets the volunteer's states for one department (api.md 3.1), as an organizer decides;
    the states added and removed."""
    allowed = [state.value for state in DepartmentState]
    unknown = states - set(allowed)
    if unknown:
        raise Invalid({"states": f"{sorted(unknown)[0]!r} is not one of {', '.join(allowed)}"})
    held = set(
        session.scalars(
            select(VolunteerDepartmentState.state).where(
                VolunteerDepartmentState.volunteer_id == volunteer.id,
                VolunteerDepartmentState.department_id == department_id,
            )
        )
    )
    added = [state for state in allowed if state in states - held]
    removed = [state for state in allowed if state in held - states]
    if not added and not removed:
        return [], []
    if removed:
        session.execute(
            delete(VolunteerDepartmentState).where(
                VolunteerDepartmentState.volunteer_id == volunteer.id,
                VolunteerDepartmentState.department_id == department_id,
                VolunteerDepartmentState.state.in_(removed),
            )
        )
    session.add_all(
        VolunteerDepartmentState(volunteer_id=volunteer.id, department_id=department_id, state=s)
        for s in added
    )
    volunteer.updated_at = utcnow()
    session.flush()
    record_event(
        session,
        actor,
        "volunteer.states_changed",
        target_type="volunteer",
        target_id=volunteer.id,
        details={"department": department_id, "added": added, "removed": removed},
    )
    return added, removed


def departments_of(session: Session, volunteer_id: int) -> set[int]:
    """The departments in which the volunteer holds any state."""
    return set(
        session.scalars(
            select(VolunteerDepartmentState.department_id)
            .where(VolunteerDepartmentState.volunteer_id == volunteer_id)
            .distinct()
        )
    )
