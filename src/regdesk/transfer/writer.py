"""Writing a checked Plan: bulk statements that insert what is new and update only what differs.

A row whose values all match the document is not written at all, so re-importing a document
changes nothing, `updated_at` included.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from regdesk.audit.service import Change
from regdesk.transfer.bulk import (
    Links,
    Tally,
    as_set,
    changed_columns,
    insert_rows,
    positional,
    update_rows,
)
from regdesk.transfer.document import ADDRESS_COLUMNS
from regdesk.transfer.existing import (
    Existing,
    Row,
    contact_methods,
    department_leads,
    department_states,
    departments,
    event_options,
    events,
    load_volunteers,
    option_values,
    roles,
    user_permissions,
    user_roles,
    users,
    volunteers,
)
from regdesk.transfer.registration_writer import SALES_KINDS, write_sales
from regdesk.transfer.validation import (
    DepartmentRecord,
    EventRecord,
    Plan,
    RoleRecord,
    UserRecord,
    VolunteerRecord,
)

KINDS = ("roles", "users", "departments", "events", "volunteers", *SALES_KINDS)

USER_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(ADDRESS_COLUMNS.values()),
    "preferred_name": None,
    "phone": None,
    "born_at": None,
    "profile_picture_url": None,
    "password_hash": None,
    "verified": False,
    "identity_verified": False,
    "newsletter": False,
}


@dataclass
class Outcome:
    tallies: dict[str, Tally] = field(default_factory=lambda: {kind: Tally() for kind in KINDS})
    role_ids: dict[str, int] = field(default_factory=dict)  # every role, by name
    user_ids: dict[str, int] = field(default_factory=dict)  # every user, by lower(username)
    department_ids: dict[str, int] = field(default_factory=dict)
    product_ids: dict[str, int] = field(default_factory=dict)  # the event's, by name
    registration_ids: dict[str, int] = field(default_factory=dict)  # the document's, by order
    changes: list[Change] = field(default_factory=list)  # of orders and registrations


def write_plan(
    session: Session, plan: Plan, existing: Existing, now: dt.datetime, *, currency: str
) -> Outcome:
    """`currency`: new orders' (the instance's, registrations.md)."""
    writer = Writer(session, existing, now)
    writer.roles(plan.roles)
    writer.users(plan.users)
    writer.departments(plan.departments)
    outcome = writer.outcome
    if plan.event is not None:
        event_id, option_ids = writer.event(plan.event)
        writer.volunteers(plan.volunteers, event_id, option_ids)
        if plan.sales is not None:
            sold = write_sales(
                session,
                plan.sales,
                existing,
                event_id=event_id,
                user_ids=outcome.user_ids,
                currency=currency,
                now=now,
            )
            outcome.tallies.update(sold.tallies)
            outcome.product_ids, outcome.registration_ids = sold.product_ids, sold.registration_ids
            outcome.changes = sold.changes
    return outcome


class Writer:
    """Writes one Plan's records kind by kind, each kind in a few bulk statements."""

    def __init__(self, session: Session, existing: Existing, now: dt.datetime) -> None:
        self.session = session
        self.conn = session.connection()
        self.existing = existing
        self.now = now
        self.outcome = Outcome()

    # --- roles, users, departments ---

    def roles(self, records: list[RoleRecord]) -> None:
        new: list[dict[str, Any]] = []
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in records:
            stored = self.existing.roles.get(record.name)
            if stored is None:
                row = {"id": record.id, "name": record.name, "staff": False}
                new.append({**row, **record.values, "created_at": self.now})
                columns = {}
            else:
                columns = changed_columns(stored, record.values)
                changes.append((stored["id"], columns))
            self.outcome.tallies["roles"].count(stored, bool(columns))
        ids = self.outcome.role_ids
        ids.update({name: row["id"] for name, row in self.existing.roles.items()})
        ids.update(insert_rows(self.session, roles, new, "name"))
        update_rows(self.conn, roles, changes)

    def users(self, records: list[UserRecord]) -> None:
        new = [self._new_user(r) for r in records if r.key not in self.existing.users]
        ids = self.outcome.user_ids
        ids.update({key: row["id"] for key, row in self.existing.users.items()})
        ids.update(
            {
                name.lower(): i
                for name, i in insert_rows(self.session, users, new, "username").items()
            }
        )
        held = Links(user_roles, "user_id", ("role_id",), ("scope",), {"created_at": self.now})
        permissions = Links(user_permissions, "user_id", ("name",))
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in records:
            user_id = ids[record.key]
            stored = self.existing.users.get(record.key)
            changed = False
            if record.roles is not None:
                wanted = {(self.outcome.role_ids[n],): (s,) for n, s in record.roles.items()}
                had = self.existing.user_roles.get(user_id, {})
                changed |= held.compare(user_id, {(r,): (s,) for r, s in had.items()}, wanted)
            if record.permissions is not None:
                had_names = self.existing.user_permissions.get(user_id, set())
                changed |= permissions.compare(
                    user_id, as_set(had_names), as_set(record.permissions)
                )
            self._settle("users", stored, record.values, changed, changes)
        update_rows(self.conn, users, changes)
        held.write(self.conn)
        permissions.write(self.conn)

    def _new_user(self, record: UserRecord) -> dict[str, Any]:
        row = {**USER_DEFAULTS, "id": record.id, **record.values}
        row.setdefault("created_at", self.now)
        row.setdefault("updated_at", row["created_at"])
        return row

    def departments(self, records: list[DepartmentRecord]) -> None:
        new = []
        for record in records:
            if record.name not in self.existing.departments:
                row = {"id": record.id, "publicly_visible": True, **record.values}
                new.append(
                    {"name": record.name, "created_at": self.now, "updated_at": self.now, **row}
                )
        ids = self.outcome.department_ids
        ids.update({name: row["id"] for name, row in self.existing.departments.items()})
        ids.update(insert_rows(self.session, departments, new, "name"))
        leads = Links(department_leads, "department_id", ("user_id",))
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in records:
            stored = self.existing.departments.get(record.name)
            changed = False
            if record.leads is not None:
                department_id = ids[record.name]
                had = self.existing.department_leads.get(department_id, set())
                wanted = {self.outcome.user_ids[key] for key in record.leads}
                changed = leads.compare(department_id, as_set(had), as_set(wanted))
            self._settle("departments", stored, record.values, changed, changes)
        update_rows(self.conn, departments, changes)
        leads.write(self.conn)

    def _settle(
        self,
        kind: str,
        stored: Row | None,
        values: dict[str, Any],
        children_changed: bool,
        changes: list[tuple[int, dict[str, Any]]],
    ) -> None:
        """Counts a record and, when a stored one differs, queues its update.

        Its `updated_at` moves to now unless the document gives one (which is then kept).
        """
        if stored is not None:
            columns = changed_columns(stored, values)
            if (columns or children_changed) and "updated_at" not in values:
                columns["updated_at"] = self.now
            if columns:
                changes.append((stored["id"], columns))
            children_changed = children_changed or bool(columns)
        self.outcome.tallies[kind].count(stored, children_changed)

    # --- the event and its volunteers ---

    def event(self, record: EventRecord) -> tuple[int, dict[str, int]]:
        stored = self.existing.events.get(record.name)
        current = self.existing.current_event()
        wanted = dict(record.values)
        if record.make_current and (current is None or current["name"] != record.name):
            wanted["is_current"] = True
            if current is not None:  # at most one current event (uq_events_current)
                self.conn.execute(
                    update(events).where(events.c.id == current["id"]).values(is_current=False)
                )
        if stored is None:
            row: dict[str, Any] = {"name": record.name, "starts_on": None, "ends_on": None}
            row["is_current"] = False
            row.update({**wanted, "created_at": self.now})
            event_id = self.conn.execute(insert(events).returning(events.c.id), row).scalar_one()
            columns: dict[str, Any] = {}
        else:
            event_id = stored["id"]
            columns = changed_columns(stored, wanted)
            update_rows(self.conn, events, [(event_id, columns)])
        option_ids, options_changed = self._options(event_id, record)
        self.outcome.tallies["events"].count(stored, bool(columns) or options_changed)
        return event_id, option_ids

    def _options(self, event_id: int, record: EventRecord) -> tuple[dict[str, int], bool]:
        stored = self.existing.event_options.get(event_id, {})
        position = max((row["position"] for row in stored.values()), default=-1)
        new: list[dict[str, Any]] = []
        changes: list[tuple[int, dict[str, Any]]] = []
        for spec in record.options.values():
            row = stored.get(spec.name)
            if row is None:
                position += 1
                new.append(
                    {
                        "event_id": event_id,
                        "name": spec.name,
                        "type": spec.type,
                        "choices": spec.choices,
                        "position": position,
                    }
                )
            elif row["choices"] != spec.choices:
                changes.append((row["id"], {"choices": spec.choices}))
        ids = {name: row["id"] for name, row in stored.items()}
        ids.update(insert_rows(self.session, event_options, new, "name"))
        update_rows(self.conn, event_options, changes)
        return ids, bool(new or changes)

    def volunteers(
        self, records: list[VolunteerRecord], event_id: int, option_ids: dict[str, int]
    ) -> None:
        had = load_volunteers(self.conn, event_id)
        user_ids = self.outcome.user_ids
        new = []
        for record in records:
            if user_ids[record.user] not in had.by_user:
                row = {"event_id": event_id, "user_id": user_ids[record.user], **record.values}
                row.setdefault("created_at", self.now)
                new.append({"updated_at": row["created_at"], **row})
        ids = {row["user_id"]: row["id"] for row in had.by_user.values()}
        ids.update(insert_rows(self.session, volunteers, new, "user_id"))
        methods = Links(
            contact_methods, "volunteer_id", ("position",), ("name", "value", "is_primary")
        )
        states = Links(department_states, "volunteer_id", ("department_id", "state"))
        answers = Links(option_values, "volunteer_id", ("option_id",), ("value",))
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in records:
            volunteer_id = ids[user_ids[record.user]]
            changed = False
            if record.contact_methods is not None:
                before = dict(enumerate(had.contact_methods.get(volunteer_id, [])))
                after = dict(enumerate(record.contact_methods))
                changed |= methods.compare(volunteer_id, positional(before), positional(after))
            if record.departments is not None:
                wanted = {
                    (self.outcome.department_ids[name], state)
                    for name, chosen in record.departments.items()
                    for state in chosen
                }
                before_states = had.states.get(volunteer_id, set())
                changed |= states.compare(volunteer_id, as_set(before_states), as_set(wanted))
            if record.options is not None:
                before_answers = had.options.get(volunteer_id, {})
                wanted_answers = {(option_ids[n],): (v,) for n, v in record.options.items()}
                changed |= answers.compare(
                    volunteer_id, {(o,): (v,) for o, v in before_answers.items()}, wanted_answers
                )
            stored = had.by_user.get(user_ids[record.user])
            self._settle("volunteers", stored, record.values, changed, changes)
        update_rows(self.conn, volunteers, changes)
        for links in (methods, states, answers):
            links.write(self.conn)
