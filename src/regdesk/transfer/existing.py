"""What the database already holds, preloaded in a few queries for matching and comparing.

Import matches the document's records to these rows by natural key (username, role name,
department name, event name) and writes only what differs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Table, select

from regdesk.db import table_of
from regdesk.departments.models import Department, DepartmentLead
from regdesk.events.models import Event, EventOption
from regdesk.oauth.models import UserPermission
from regdesk.registrations.models import (
    LIVE_STATUSES,
    Order,
    Product,
    Registration,
    RegistrationFlag,
    RegistrationFlagLink,
    RegistrationOption,
    RegistrationOptionValue,
)
from regdesk.roles.models import Role, UserRole
from regdesk.users.models import User
from regdesk.volunteers.models import (
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)

Row = dict[str, Any]


users = table_of(User)
user_permissions = table_of(UserPermission)
roles = table_of(Role)
user_roles = table_of(UserRole)
departments = table_of(Department)
department_leads = table_of(DepartmentLead)
events = table_of(Event)
event_options = table_of(EventOption)
volunteers = table_of(Volunteer)
contact_methods = table_of(VolunteerContactMethod)
department_states = table_of(VolunteerDepartmentState)
option_values = table_of(VolunteerOptionValue)
products = table_of(Product)
orders = table_of(Order)
registrations = table_of(Registration)
registration_flags = table_of(RegistrationFlag)
flag_links = table_of(RegistrationFlagLink)
registration_options = table_of(RegistrationOption)
registration_answers = table_of(RegistrationOptionValue)


@dataclass
class ExistingSales:
    """Every event's products, flags and registration options, and every order with its
    registration: what an import's registrations are matched and counted against (order
    numbers, ticket codes and ids are unique across events)."""

    products: dict[int, dict[str, Row]]  # event id -> name -> row
    flags: dict[int, dict[str, Row]]  # event id -> short name -> row
    options: dict[int, dict[str, Row]]  # event id -> name -> row
    orders: dict[str, Row]  # by number
    registrations: dict[int, Row]  # by order id
    registration_numbers_by_id: dict[int, str] = field(init=False)
    live: dict[tuple[int, int], str] = field(init=False)  # (event, user) -> its live order
    ticket_codes: dict[str, str] = field(init=False)  # code -> order number
    held: dict[int, int] = field(init=False)  # product id -> live orders (places taken)

    def __post_init__(self) -> None:
        numbers = {row["id"]: number for number, row in self.orders.items()}
        self.registration_numbers_by_id = {
            row["id"]: numbers[order_id] for order_id, row in self.registrations.items()
        }
        self.live, self.ticket_codes, self.held = {}, {}, {}
        for order in self.orders.values():
            registration = self.registrations[order["id"]]
            self.ticket_codes[registration["ticket_code"]] = order["number"]
            if order["status"] in LIVE_STATUSES:
                self.live[order["event_id"], order["user_id"]] = order["number"]
                self.held[order["product_id"]] = self.held.get(order["product_id"], 0) + 1

    @classmethod
    def empty(cls) -> ExistingSales:
        return cls({}, {}, {}, {}, {})

    def product_names_by_id(self) -> dict[int, str]:
        return {row["id"]: n for rows in self.products.values() for n, row in rows.items()}

    def flag_names_by_id(self) -> dict[int, str]:
        return {row["id"]: n for rows in self.flags.values() for n, row in rows.items()}


@dataclass
class Existing:
    """The rows an import is matched against, keyed the way the document names them."""

    users: dict[str, Row]  # by lower(username), as the unique index compares them
    user_emails: dict[str, int]  # lower(email) -> user id
    user_roles: dict[int, dict[int, str]]  # user id -> role id -> scope
    user_permissions: dict[int, set[str]]
    roles: dict[str, Row]  # by name
    departments: dict[str, Row]
    department_leads: dict[int, set[int]]
    events: dict[str, Row]
    event_options: dict[int, dict[str, Row]]  # event id -> option name -> row
    sales: ExistingSales = field(default_factory=ExistingSales.empty)
    user_names_by_id: dict[int, str] = field(init=False)
    role_names_by_id: dict[int, str] = field(init=False)
    department_names_by_id: dict[int, str] = field(init=False)

    def __post_init__(self) -> None:
        self.user_names_by_id = {row["id"]: row["username"] for row in self.users.values()}
        self.role_names_by_id = {row["id"]: name for name, row in self.roles.items()}
        self.department_names_by_id = {row["id"]: n for n, row in self.departments.items()}

    def current_event(self) -> Row | None:
        return next((row for row in self.events.values() if row["is_current"]), None)


def load_existing(conn: Connection, *, sales: bool = False) -> Existing:
    """The rows an import is matched against; `sales`: the products, orders and registrations
    too (only a document with registrations.md's sections needs them)."""
    sold = load_sales(conn) if sales else ExistingSales.empty()
    user_rows = _rows(conn, users)
    return Existing(
        users={row["username"].lower(): row for row in user_rows},
        user_emails={row["email"].lower(): row["id"] for row in user_rows},
        user_roles=_nested(conn, user_roles, "user_id", "role_id", "scope"),
        user_permissions=_sets(conn, user_permissions, "user_id", "name"),
        roles={row["name"]: row for row in _rows(conn, roles)},
        departments={row["name"]: row for row in _rows(conn, departments)},
        department_leads=_sets(conn, department_leads, "department_id", "user_id"),
        events={row["name"]: row for row in _rows(conn, events)},
        event_options=_nested(conn, event_options, "event_id", "name", None),
        sales=sold,
    )


@dataclass
class ExistingVolunteers:
    """One event's volunteer records and what hangs off them."""

    by_user: dict[int, Row]
    contact_methods: dict[int, list[tuple[str, str, bool]]]  # in position order
    states: dict[int, set[tuple[int, str]]]  # volunteer id -> (department id, state)
    options: dict[int, dict[int, Any]]  # volunteer id -> option id -> value


def load_volunteers(conn: Connection, event_id: int | None) -> ExistingVolunteers:
    if event_id is None:
        return ExistingVolunteers({}, {}, {}, {})
    of_event = select(volunteers.c.id).where(volunteers.c.event_id == event_id)
    methods: defaultdict[int, list[tuple[str, str, bool]]] = defaultdict(list)
    method_rows = conn.execute(
        select(contact_methods)
        .where(contact_methods.c.volunteer_id.in_(of_event))
        .order_by(contact_methods.c.volunteer_id, contact_methods.c.position)
    )
    for row in method_rows:
        methods[row.volunteer_id].append((row.name, row.value, row.is_primary))
    states: defaultdict[int, set[tuple[int, str]]] = defaultdict(set)
    for row in conn.execute(
        select(department_states).where(department_states.c.volunteer_id.in_(of_event))
    ):
        states[row.volunteer_id].add((row.department_id, row.state))
    return ExistingVolunteers(
        by_user={
            row["user_id"]: row
            for row in _rows(conn, volunteers, volunteers.c.event_id == event_id)
        },
        contact_methods=dict(methods),
        states=dict(states),
        options=_nested(
            conn,
            option_values,
            "volunteer_id",
            "option_id",
            "value",
            option_values.c.volunteer_id.in_(of_event),
        ),
    )


def load_sales(conn: Connection) -> ExistingSales:
    """Locks every product first (as `ordering.place_order` locks the one it sells), so no
    order is placed between the places counted here and the import's commit: of an import and
    a sale racing for a product's last place, one waits for the other (PostgreSQL; SQLite's
    write transaction holds the whole database already)."""
    conn.execute(select(products.c.id).order_by(products.c.id).with_for_update()).all()
    return ExistingSales(
        products=_nested(conn, products, "event_id", "name", None),
        flags=_nested(conn, registration_flags, "event_id", "short_name", None),
        options=_nested(conn, registration_options, "event_id", "name", None),
        orders={row["number"]: row for row in _rows(conn, orders)},
        registrations={row["order_id"]: row for row in _rows(conn, registrations)},
    )


def _rows(conn: Connection, source: Table, *where: Any) -> list[Row]:
    return [dict(row) for row in conn.execute(select(source).where(*where)).mappings()]


def _sets(conn: Connection, source: Table, key: str, member: str) -> dict[int, set[Any]]:
    grouped: defaultdict[int, set[Any]] = defaultdict(set)
    for row in conn.execute(select(source.c[key], source.c[member])):
        grouped[row[0]].add(row[1])
    return dict(grouped)


def _nested(
    conn: Connection, source: Table, outer: str, inner: str, value: str | None, *where: Any
) -> dict[Any, dict[Any, Any]]:
    """{outer: {inner: value}}, or {outer: {inner: row}} when `value` is None."""
    grouped: defaultdict[Any, dict[Any, Any]] = defaultdict(dict)
    for row in conn.execute(select(source).where(*where)).mappings():
        grouped[row[outer]][row[inner]] = dict(row) if value is None else row[value]
    return dict(grouped)
