"""Writing a checked Plan: bulk statements that insert what is new and update only what differs.

A row whose values all match the document is not written at all, so re-importing a document
changes nothing, `updated_at` included.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Table, bindparam, delete, insert, update
from sqlalchemy.orm import Session

from regdesk.db import sync_sequences
from regdesk.formats import truncate_to_ms
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
from regdesk.transfer.validation import (
    DepartmentRecord,
    EventRecord,
    Plan,
    RoleRecord,
    UserRecord,
    VolunteerRecord,
)

KINDS = ("roles", "users", "departments", "events", "volunteers")

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
class Tally:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def count(self, stored: Row | None, changed: bool) -> None:
        if stored is None:
            self.created += 1
        elif changed:
            self.updated += 1
        else:
            self.unchanged += 1


@dataclass
class Outcome:
    tallies: dict[str, Tally] = field(default_factory=lambda: {kind: Tally() for kind in KINDS})
    role_ids: dict[str, int] = field(default_factory=dict)  # every role, by name
    user_ids: dict[str, int] = field(default_factory=dict)  # every user, by lower(username)
    department_ids: dict[str, int] = field(default_factory=dict)


def write_plan(session: Session, plan: Plan, existing: Existing, now: dt.datetime) -> Outcome:
    writer = Writer(session, existing, now)
    writer.roles(plan.roles)
    writer.users(plan.users)
    writer.departments(plan.departments)
    if plan.event is not None:
        event_id, option_ids = writer.event(plan.event)
        writer.volunteers(plan.volunteers, event_id, option_ids)
    return writer.outcome


def changed_columns(stored: Row, values: Mapping[str, Any]) -> dict[str, Any]:
    """The values that differ from the stored row; timestamps compare to the millisecond."""
    return {c: v for c, v in values.items() if not _same(stored[c], v)}


def _same(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, dt.datetime) and isinstance(wanted, dt.datetime):
        return truncate_to_ms(stored) == truncate_to_ms(wanted)
    return bool(stored == wanted)


class Links:
    """The rows of a link table for many owners, brought to the wanted state in bulk.

    Members are keyed by the tuple of their `key` columns; each carries the tuple of its
    `value` columns (empty for plain sets such as a user's permissions).
    """

    def __init__(
        self,
        table: Table,
        owner: str,
        key: tuple[str, ...],
        value: tuple[str, ...] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.table, self.owner, self.key, self.value = table, owner, key, value
        self.extra = dict(extra or {})  # columns that new rows get, such as created_at
        self.inserts: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.deletes: list[dict[str, Any]] = []

    def compare(
        self,
        owner: int,
        stored: Mapping[tuple[Any, ...], tuple[Any, ...]],
        wanted: Mapping[tuple[Any, ...], tuple[Any, ...]],
    ) -> bool:
        """Queues the writes that turn `stored` into `wanted`; whether there are any."""
        before = len(self.inserts) + len(self.updates) + len(self.deletes)
        for member, values in wanted.items():
            row = self._row(owner, member, values)
            if member not in stored:
                self.inserts.append({**self.extra, **row})
            elif stored[member] != values:
                self.updates.append(row)
        for member in stored.keys() - wanted.keys():
            self.deletes.append(self._row(owner, member, ()))
        return len(self.inserts) + len(self.updates) + len(self.deletes) > before

    def write(self, conn: Connection) -> None:
        keys = (self.owner, *self.key)
        where = [self.table.c[c] == bindparam(f"key_{c}") for c in keys]
        if self.deletes:
            conn.execute(delete(self.table).where(*where), [_keyed(r, keys) for r in self.deletes])
        if self.updates:
            values: dict[str, Any] = {c: bindparam(f"new_{c}") for c in self.value}
            statement = update(self.table).where(*where).values(values)
            conn.execute(statement, [_keyed(r, keys) for r in self.updates])
        if self.inserts:
            conn.execute(insert(self.table), self.inserts)

    def _row(self, owner: int, member: tuple[Any, ...], values: tuple[Any, ...]) -> dict[str, Any]:
        return {
            self.owner: owner,
            **dict(zip(self.key, member, strict=True)),
            **dict(zip(self.value, values, strict=False)),
        }


def _keyed(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The row's values under the bind names of an UPDATE or DELETE (key_ in WHERE, new_ in SET)."""
    return {(f"key_{c}" if c in keys else f"new_{c}"): v for c, v in row.items()}


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
        ids.update(self._insert(roles, new, "name"))
        self._update(roles, changes)

    def users(self, records: list[UserRecord]) -> None:
        new = [self._new_user(r) for r in records if r.key not in self.existing.users]
        ids = self.outcome.user_ids
        ids.update({key: row["id"] for key, row in self.existing.users.items()})
        ids.update({name.lower(): i for name, i in self._insert(users, new, "username").items()})
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
                    user_id, _as_set(had_names), _as_set(record.permissions)
                )
            self._settle("users", stored, record.values, changed, changes)
        self._update(users, changes)
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
        ids.update(self._insert(departments, new, "name"))
        leads = Links(department_leads, "department_id", ("user_id",))
        changes: list[tuple[int, dict[str, Any]]] = []
        for record in records:
            stored = self.existing.departments.get(record.name)
            changed = False
            if record.leads is not None:
                department_id = ids[record.name]
                had = self.existing.department_leads.get(department_id, set())
                wanted = {self.outcome.user_ids[key] for key in record.leads}
                changed = leads.compare(department_id, _as_set(had), _as_set(wanted))
            self._settle("departments", stored, record.values, changed, changes)
        self._update(departments, changes)
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
            self._update(events, [(event_id, columns)])
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
        ids.update(self._insert(event_options, new, "name"))
        self._update(event_options, changes)
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
        ids.update(self._insert(volunteers, new, "user_id"))
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
                changed |= methods.compare(volunteer_id, _positional(before), _positional(after))
            if record.departments is not None:
                wanted = {
                    (self.outcome.department_ids[name], state)
                    for name, chosen in record.departments.items()
                    for state in chosen
                }
                before_states = had.states.get(volunteer_id, set())
                changed |= states.compare(volunteer_id, _as_set(before_states), _as_set(wanted))
            if record.options is not None:
                before_answers = had.options.get(volunteer_id, {})
                wanted_answers = {(option_ids[n],): (v,) for n, v in record.options.items()}
                changed |= answers.compare(
                    volunteer_id, {(o,): (v,) for o, v in before_answers.items()}, wanted_answers
                )
            stored = had.by_user.get(user_ids[record.user])
            self._settle("volunteers", stored, record.values, changed, changes)
        self._update(volunteers, changes)
        for links in (methods, states, answers):
            links.write(self.conn)

    # --- bulk statements ---

    def _insert(self, table: Table, rows: list[dict[str, Any]], key: str) -> dict[Any, int]:
        """Inserts rows, returning {row[key]: id}.

        Rows asking for an id go first, and the sequence is moved past them before the others
        take theirs from it.
        """
        chosen = [row for row in rows if row.get("id") is not None]
        if chosen:
            self.conn.execute(insert(table), chosen)
            sync_sequences(self.session, table.name)
        ids = {row[key]: row["id"] for row in chosen}
        others = [
            {c: v for c, v in row.items() if c != "id"} for row in rows if row.get("id") is None
        ]
        if others:
            statement = insert(table).returning(table.c[key], table.c.id)
            ids.update({row[0]: row[1] for row in self.conn.execute(statement, others)})
        return ids

    def _update(self, table: Table, changes: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """One executemany per set of changed columns: only what differs is written."""
        grouped: defaultdict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        for row_id, columns in changes:
            if columns:
                grouped[tuple(sorted(columns))].append(_keyed({"id": row_id, **columns}, ("id",)))
        for names, params in grouped.items():
            statement = (
                update(table)
                .where(table.c.id == bindparam("key_id"))
                .values({name: bindparam(f"new_{name}") for name in names})
            )
            self.conn.execute(statement, params)


def _as_set(members: Iterable[Any]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {(m if isinstance(m, tuple) else (m,)): () for m in members}


def _positional(
    methods: Mapping[int, tuple[str, str, bool]],
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {(position,): method for position, method in methods.items()}
