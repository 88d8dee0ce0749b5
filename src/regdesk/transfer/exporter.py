"""`regdesk export`: every record as the import document (importer.py describes the shape).

Exporting, importing into an empty database and exporting again gives the same document, ids
included. Records are ordered by id; ids are numbers; timestamps are UTC with milliseconds.
Users carry `passwordHash` (never a password), left out when they have none.

Only the current event is exported, with its options, its volunteers, and its products,
registration flags and options and registrations (registration_export.py); those of past
events stay in the database. Without a current event there is no `event` section and those
lists are empty.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, Engine, select

from regdesk.db import read_session
from regdesk.formats import format_date, format_timestamp
from regdesk.transfer.document import ADDRESS_COLUMNS, USER_COLUMNS
from regdesk.transfer.existing import (
    contact_methods,
    department_leads,
    department_states,
    departments,
    event_options,
    events,
    option_values,
    roles,
    user_permissions,
    user_roles,
    users,
    volunteers,
)
from regdesk.transfer.registration_export import sales_sections
from regdesk.volunteers.models import STATE_ORDER

PLAIN_USER_FIELDS = (
    "username",
    "email",
    "firstName",
    "lastName",
    "preferredName",
    "phone",
    "verified",
)


def document_text(document: dict[str, Any]) -> str:
    """The document as `regdesk export` writes it (and the admin page's download)."""
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def export_document(engine: Engine) -> dict[str, Any]:
    with read_session(engine) as session:
        conn = session.connection()
        document: dict[str, Any] = {}
        event = conn.execute(select(events).where(events.c.is_current)).mappings().first()
        if event is not None:
            document["event"] = _event(conn, event)
        document["roles"] = [
            {"id": row.id, "name": row.name, "staff": row.staff}
            for row in conn.execute(select(roles).order_by(roles.c.id))
        ]
        document["users"] = _users(conn)
        document["departments"] = _departments(conn)
        document["volunteers"] = _volunteers(conn, event["id"]) if event is not None else []
        document.update(sales_sections(conn, event["id"] if event is not None else None))
        return document


def _event(conn: Connection, event: Any) -> dict[str, Any]:
    options = conn.execute(
        select(event_options)
        .where(event_options.c.event_id == event["id"])
        .order_by(event_options.c.position, event_options.c.id)
    )
    return {
        "name": event["name"],
        "startsOn": format_date(event["starts_on"]),
        "endsOn": format_date(event["ends_on"]),
        "current": True,
        "options": [{"name": o.name, "type": o.type, "choices": o.choices} for o in options],
    }


def _users(conn: Connection) -> list[dict[str, Any]]:
    held: defaultdict[int, list[dict[str, str]]] = defaultdict(list)
    for row in conn.execute(
        select(user_roles.c.user_id, roles.c.name, user_roles.c.scope)
        .join(roles, roles.c.id == user_roles.c.role_id)
        .order_by(user_roles.c.user_id, roles.c.id)
    ):
        held[row.user_id].append({"name": row.name, "scope": row.scope})
    permissions: defaultdict[int, list[str]] = defaultdict(list)
    for row in conn.execute(select(user_permissions).order_by(user_permissions.c.name)):
        permissions[row.user_id].append(row.name)
    rows = conn.execute(select(users).order_by(users.c.id)).mappings()
    return [_user(row, held[row["id"]], permissions[row["id"]]) for row in rows]


def _user(row: Any, held: list[dict[str, str]], permissions: list[str]) -> dict[str, Any]:
    user: dict[str, Any] = {"id": row["id"]}
    user.update({key: row[USER_COLUMNS[key]] for key in PLAIN_USER_FIELDS})
    if row["password_hash"] is not None:
        user["passwordHash"] = row["password_hash"]
    address = {key: row[column] for key, column in ADDRESS_COLUMNS.items()}
    user.update(
        bornAt=format_date(row["born_at"]),
        newsletter=row["newsletter"],
        identityVerified=row["identity_verified"],
        profilePictureUrl=row["profile_picture_url"],
        address=address if any(v is not None for v in address.values()) else None,
        roles=held,
        permissions=permissions,
        createdAt=format_timestamp(row["created_at"]),
        updatedAt=format_timestamp(row["updated_at"]),
    )
    return user


def _departments(conn: Connection) -> list[dict[str, Any]]:
    leads: defaultdict[int, list[str]] = defaultdict(list)
    for row in conn.execute(
        select(department_leads.c.department_id, users.c.username).join(
            users, users.c.id == department_leads.c.user_id
        )
    ):
        leads[row.department_id].append(row.username)
    return [
        {
            "id": row.id,
            "name": row.name,
            "email": row.email,
            "publiclyVisible": row.publicly_visible,
            "leads": sorted(leads[row.id]),
        }
        for row in conn.execute(select(departments).order_by(departments.c.id))
    ]


def _volunteers(conn: Connection, event_id: int) -> list[dict[str, Any]]:
    of_event = select(volunteers.c.id).where(volunteers.c.event_id == event_id)
    methods: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in conn.execute(
        select(contact_methods)
        .where(contact_methods.c.volunteer_id.in_(of_event))
        .order_by(contact_methods.c.position)
    ):
        methods[row.volunteer_id].append(
            {"name": row.name, "isPrimary": row.is_primary, "value": row.value}
        )
    assignments = _assignments(conn, of_event)
    answers: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in conn.execute(
        select(option_values.c.volunteer_id, event_options.c.name, event_options.c.type)
        .add_columns(option_values.c.value)
        .join(event_options, event_options.c.id == option_values.c.option_id)
        .where(option_values.c.volunteer_id.in_(of_event))
        .order_by(event_options.c.position, event_options.c.id)
    ):
        answers[row.volunteer_id].append({"name": row.name, "type": row.type, "value": row.value})
    return [
        {
            "user": row.username,
            "contactMethods": methods[row.id],
            "departments": assignments[row.id],
            "options": answers[row.id],
            "createdAt": format_timestamp(row.created_at),
            "updatedAt": format_timestamp(row.updated_at),
        }
        for row in conn.execute(
            select(volunteers, users.c.username)
            .join(users, users.c.id == volunteers.c.user_id)
            .where(volunteers.c.event_id == event_id)
            .order_by(volunteers.c.id)
        )
    ]


def _assignments(conn: Connection, of_event: Any) -> defaultdict[int, list[dict[str, Any]]]:
    """Departments by id, each with its states in api.md 3.1's order."""
    states: defaultdict[int, dict[int, list[str]]] = defaultdict(dict)
    names: dict[int, str] = {}
    for row in conn.execute(
        select(department_states, departments.c.name)
        .join(departments, departments.c.id == department_states.c.department_id)
        .where(department_states.c.volunteer_id.in_(of_event))
        .order_by(department_states.c.department_id)
    ):
        states[row.volunteer_id].setdefault(row.department_id, []).append(row.state)
        names[row.department_id] = row.name
    result: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for volunteer_id, by_department in states.items():
        result[volunteer_id] = [
            {"name": names[d], "states": sorted(chosen, key=STATE_ORDER.__getitem__)}
            for d, chosen in by_department.items()
        ]
    return result
