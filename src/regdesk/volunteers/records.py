"""Volunteer records of the API (api.md 2.5, 4.3, 4.4): the current event's applications, read
a page at a time, kept rendered as documents (regdesk.documents).

A page is one query whatever its depth: the ready documents of the next volunteers (keyset on
ix_volunteers_event_id_id). Rendering a record from its tables, for the documents and for any a
reader finds missing, costs the same few queries for a whole batch: the volunteers with their
users, then the contact methods, department states, options and staff flags of the batch, each
in one query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, select
from sqlalchemy.orm import Session

from regdesk.db import among
from regdesk.db.driver import LoopReads
from regdesk.departments.models import Department
from regdesk.documents import Document, Stale
from regdesk.documents.reading import complete, read_page
from regdesk.events.models import CURRENT_EVENT_ID, EventOption, in_current_event
from regdesk.formats import as_json
from regdesk.roles.models import Role, UserRole
from regdesk.users.models import User
from regdesk.users.records import SHOWN_COLUMNS
from regdesk.volunteers.models import (
    STATE_ORDER,
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)
from regdesk.volunteers.schemas import render_volunteer

Bind = Session | Connection
BATCH = 2000
VOLUNTEERS: Any = Volunteer.__table__
CONTACT_METHODS: Any = VolunteerContactMethod.__table__

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


def volunteer_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the volunteers with these ids (those that exist), from the tables."""
    wanted = sorted(ids)
    rendered = {}
    for start in range(0, len(wanted), BATCH):
        rows = bind.execute(
            VOLUNTEER_WITH_USER.where(among(bind, Volunteer.id, wanted[start : start + BATCH]))
        ).all()
        for row, record in zip(rows, render_volunteers(bind, rows), strict=True):
            rendered[row.volunteer_id] = as_json(record)
    return rendered


def render_volunteers(bind: Bind, rows: Sequence[Row[Any]]) -> list[dict[str, Any]]:
    """api.md 2.5 for rows of VOLUNTEER_WITH_USER, in their order."""
    if not rows:
        return []
    ids = [row.volunteer_id for row in rows]
    contacts = _grouped(
        bind.execute(
            select(
                VolunteerContactMethod.volunteer_id,
                VolunteerContactMethod.name,
                VolunteerContactMethod.is_primary,
                VolunteerContactMethod.value,
            )
            .where(among(bind, VolunteerContactMethod.volunteer_id, ids))
            .order_by(VolunteerContactMethod.volunteer_id, VolunteerContactMethod.position)
        )
    )
    options = _grouped(
        bind.execute(
            select(
                VolunteerOptionValue.volunteer_id,
                EventOption.name,
                EventOption.type,
                VolunteerOptionValue.value,
            )
            .join(EventOption, EventOption.id == VolunteerOptionValue.option_id)
            .where(among(bind, VolunteerOptionValue.volunteer_id, ids))
            .order_by(VolunteerOptionValue.volunteer_id, EventOption.position, EventOption.id)
        )
    )
    departments = _departments(bind, ids)
    staff = set(
        bind.scalars(
            select(UserRole.user_id)
            .join(Role, Role.id == UserRole.role_id)
            .where(Role.staff.is_(True), among(bind, UserRole.user_id, [row.id for row in rows]))
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


def _departments(bind: Bind, ids: list[int]) -> defaultdict[int, list[tuple[Any, list[str]]]]:
    """Per volunteer: (department, states) in department-id order, states in api.md order."""
    result: defaultdict[int, list[tuple[Any, list[str]]]] = defaultdict(list)
    for row in bind.execute(
        select(
            VolunteerDepartmentState.volunteer_id,
            VolunteerDepartmentState.department_id,
            Department.name,
            VolunteerDepartmentState.state,
        )
        .join(Department, Department.id == VolunteerDepartmentState.department_id)
        .where(among(bind, VolunteerDepartmentState.volunteer_id, ids))
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


DOCUMENT = Document(
    kind="volunteer",
    records="volunteers",
    render=volunteer_documents,
    stale=(
        Stale(
            "users",
            "SELECT id FROM volunteers WHERE user_id = R.id",
            ("UPDATE",),
            SHOWN_COLUMNS,
        ),
        Stale(
            "volunteers",
            "SELECT R.id",
            ("INSERT", "UPDATE"),
            ("id", "event_id", "user_id", "created_at", "updated_at"),
        ),
        Stale("volunteer_contact_methods", "SELECT R.volunteer_id"),
        Stale("volunteer_department_states", "SELECT R.volunteer_id"),
        Stale("volunteer_option_values", "SELECT R.volunteer_id"),
        Stale("user_roles", "SELECT id FROM volunteers WHERE user_id = R.user_id"),  # isStaff
        Stale(
            "departments",
            "SELECT volunteer_id FROM volunteer_department_states WHERE department_id = R.id",
            ("UPDATE",),
            ("name",),
        ),
        Stale(
            "event_options",
            "SELECT volunteer_id FROM volunteer_option_values WHERE option_id = R.id",
            ("UPDATE",),
            ("name", "type", "position"),
        ),
        Stale(
            "roles",
            "SELECT v.id FROM volunteers v JOIN user_roles ur ON ur.user_id = v.user_id"
            " WHERE ur.role_id = R.id",
            ("UPDATE",),
            ("staff",),
        ),
    ),
)


def _page(sqlite: bool) -> str:
    """The current event's applications in id order, seeking ix_volunteers_event_id_id, each
    with its stored body unless queued (Document.read), in each database's form."""
    current, order = in_current_event("v", sqlite=sqlite)
    return f"""
        SELECT v.id, {{body}}
        FROM volunteers v{{documents}}
        WHERE {current} AND v.id > :after
        ORDER BY {order} LIMIT :limit
    """  # noqa: S608 (the current event's subqueries)


PAGE = DOCUMENT.page(_page(sqlite=False), "v.id", sqlite=_page(sqlite=True))
OF_USER = DOCUMENT.read(
    f"""
    SELECT u.id, v.id, {{body}}
    FROM users u
    LEFT JOIN volunteers v
        ON v.user_id = u.id AND v.event_id = {CURRENT_EVENT_ID}{{documents}}
    WHERE u.id = :user_id
    """,  # noqa: S608 (the current event's subquery)
    "v.id",
)


async def volunteer_page(reads: LoopReads, after_id: int, limit: int) -> tuple[bytes, int | None]:
    """The JSON records of the current event's volunteers after `after_id`, joined by commas,
    and the id to continue after when more follow."""
    return await read_page(reads, PAGE, DOCUMENT, limit, after=after_id)


async def volunteer_of_user(reads: LoopReads, user_id: int) -> tuple[bool, str | None]:
    """Whether the user exists, and the JSON record of their application for the current
    event if they made one."""
    row = await reads.first(OF_USER, user_id=user_id)
    if row is None:
        return False, None
    _, volunteer_id, body = row
    if not volunteer_id:
        return True, None
    found = complete(reads, [(volunteer_id, body)], DOCUMENT)
    return True, (found[0] if found else None)
