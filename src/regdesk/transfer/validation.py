"""Checking a whole document against the rules and the database, before anything is written.

`validate` is pure: from the document and the preloaded rows it makes a Plan of normalised
records (column names and canonical values), or raises ImportRejected naming every bad field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from regdesk.accounts.password_rule import password_problem
from regdesk.events.service import DEFAULT_EVENT_NAME
from regdesk.fields import (
    Parser,
    array,
    boolean,
    date,
    describe,
    one_of,
    password,
    password_hash,
    text,
    timestamp,
)
from regdesk.oauth.permissions import PERMISSIONS
from regdesk.roles.models import RoleScope
from regdesk.transfer.document import (
    ADDRESS_COLUMNS,
    ASSIGNMENT_KEYS,
    CONTACT_METHOD_KEYS,
    DEPARTMENT_KEYS,
    EVENT_KEYS,
    EVENT_OPTION_KEYS,
    ROLE_KEYS,
    SECTIONS,
    USER_COLUMNS,
    USER_KEYS,
    VOLUNTEER_KEYS,
    Errors,
)
from regdesk.transfer.existing import (
    Existing,
    Row,
    contact_methods,
    departments,
    events,
    roles,
    users,
)
from regdesk.transfer.records import (
    OptionSpec,
    Record,
    check_id,
    check_option_answers,
    declare_option,
    once,
    records,
)
from regdesk.transfer.registrations import Sales, check_sales, wants_sales
from regdesk.users.fields import (
    EMAIL,
    FIRST_NAME,
    LAST_NAME,
    PREFERRED_NAME,
    USERNAME,
    check_picture_url,
    normalize_country,
    normalize_email,
    normalize_phone,
)
from regdesk.volunteers.models import DepartmentState


@dataclass
class RoleRecord:
    label: str
    name: str
    id: int | None  # an explicit id for a new role
    values: dict[str, Any]


@dataclass
class UserRecord:
    label: str
    username: str  # as the document spells it
    id: int | None
    values: dict[str, Any]  # only the fields the document gives (PATCH semantics)
    password: str | None  # plaintext, hashed at import unless the stored hash verifies
    roles: dict[str, str] | None  # role name -> scope; None leaves the stored roles alone
    permissions: set[str] | None

    @property
    def key(self) -> str:
        return self.username.lower()


@dataclass
class DepartmentRecord:
    label: str
    name: str
    id: int | None
    values: dict[str, Any]
    leads: set[str] | None  # lower(username)


@dataclass
class EventRecord:
    name: str
    values: dict[str, Any]
    make_current: bool
    # Every option the event will have: the stored ones, then those the document declares,
    # then those its volunteers answer without a declaration.
    options: dict[str, OptionSpec]


@dataclass
class VolunteerRecord:
    label: str
    user: str  # lower(username)
    values: dict[str, Any]
    contact_methods: list[tuple[str, str, bool]] | None  # (name, value, isPrimary)
    departments: dict[str, set[str]] | None  # department name -> states
    options: dict[str, Any] | None  # option name -> value


@dataclass
class Plan:
    roles: list[RoleRecord]
    users: list[UserRecord]
    departments: list[DepartmentRecord]
    event: EventRecord | None
    volunteers: list[VolunteerRecord]
    sales: Sales | None = None  # registrations.md's sections (transfer/registrations.py)


def validate(document: Any, existing: Existing, phone_region: str, currency: str) -> Plan:
    """`currency`: the instance's, which new orders are in."""
    errors = Errors()
    if not isinstance(document, dict):
        errors.add("document", f"must be a JSON object, not {describe(document)}")
        errors.raise_if_any()
    for key in document:
        if key not in SECTIONS:
            errors.add(key, f"unknown section (expected {', '.join(SECTIONS)})")
    role_records = _check_roles(document, errors, existing)
    role_names = set(existing.roles) | {r.name for r in role_records}
    user_records = _check_users(document, errors, existing, phone_region, role_names)
    user_keys = set(existing.users) | {u.key for u in user_records}
    department_records = _check_departments(document, errors, existing, user_keys)
    department_names = set(existing.departments) | {d.name for d in department_records}
    event = _check_event(document, errors, existing)
    catalogue = event.options if event else {}
    volunteer_records = _check_volunteers(document, errors, user_keys, department_names, catalogue)
    documented = {u.key: u.values.get("email") for u in user_records}
    sales = check_sales(
        document, errors, existing, event.name if event else None, documented, currency
    )
    errors.raise_if_any()
    return Plan(role_records, user_records, department_records, event, volunteer_records, sales)


# --- roles -----------------------------------------------------------------------------------


def _check_roles(document: dict[str, Any], errors: Errors, existing: Existing) -> list[RoleRecord]:
    result = []
    names: dict[Any, str] = {}
    ids: dict[Any, str] = {}
    for record in records(document, "roles", errors, ROLE_KEYS):
        record.require("name")
        record.column("name", "name", text(roles.c.name, nonempty=True))
        record.column("staff", "staff", boolean)
        name = record.values.get("name")
        if name is None:
            continue
        once(record, "name", name, names, "role")
        stored = existing.roles.get(name)
        role_id = check_id(record, stored, existing.role_names_by_id, ids, "role")
        result.append(RoleRecord(record.label, name, role_id, record.values))
    return result


# --- users -----------------------------------------------------------------------------------

_USER_FIELDS: tuple[tuple[str, Parser, bool], ...] = (
    ("username", USERNAME, False),
    ("email", EMAIL, False),
    ("firstName", FIRST_NAME, False),
    ("lastName", LAST_NAME, False),
    ("preferredName", PREFERRED_NAME, True),
    ("verified", boolean, False),
    ("identityVerified", boolean, False),
    ("newsletter", boolean, False),
    ("bornAt", date, True),
    ("profilePictureUrl", text(users.c.profile_picture_url, normalize=check_picture_url), True),
    ("createdAt", timestamp, False),
    ("updatedAt", timestamp, False),
)
_ADDRESS_KEYS = frozenset(ADDRESS_COLUMNS)


@dataclass
class _Seen:
    usernames: dict[Any, str] = field(default_factory=dict)
    emails: dict[Any, str] = field(default_factory=dict)
    ids: dict[Any, str] = field(default_factory=dict)


def _check_users(
    document: dict[str, Any],
    errors: Errors,
    existing: Existing,
    phone_region: str,
    role_names: set[str],
) -> list[UserRecord]:
    result = []
    seen = _Seen()
    for record in records(document, "users", errors, USER_KEYS):
        record.require("username")
        for key, parse, nullable in _USER_FIELDS:
            record.column(key, USER_COLUMNS[key], parse, nullable=nullable)
        username = record.values.get("username")
        stored = existing.users.get(username.lower()) if username else None
        if username and stored is None:
            record.require("email", "firstName", "lastName")
        _check_address(record)
        _check_phone(record, stored, phone_region)
        _check_email(record, stored, existing, seen)
        user_id = check_id(record, stored, existing.user_names_by_id, seen.ids, "user")
        secret = _check_password(record, stored)
        user_roles = _check_user_roles(record, role_names)
        permissions = _check_permissions(record)
        if username is None:
            continue
        once(record, "username", username.lower(), seen.usernames, "username")
        result.append(
            UserRecord(
                record.label, username, user_id, record.values, secret, user_roles, permissions
            )
        )
    return result


def _check_address(record: Record) -> None:
    """The address is one value: an object of the six fields (absent ones null), or null."""
    if "address" not in record.raw:
        return
    raw = record.raw["address"]
    if raw is None:
        record.values.update(dict.fromkeys(ADDRESS_COLUMNS.values()))
        return
    address = record.child("address", raw, _ADDRESS_KEYS)
    if not address.ok:
        return
    for key, column in ADDRESS_COLUMNS.items():
        normalize = normalize_country if key == "addressCountry" else None
        address.column(key, column, text(users.c[column], normalize=normalize), nullable=True)
    record.values.update({c: address.values.get(c) for c in ADDRESS_COLUMNS.values()})


def _check_phone(record: Record, stored: Row | None, default_region: str) -> None:
    """National numbers are read in the user's country (api.md 2.1: stored as E.164)."""
    if "address" in record.raw:
        country = record.values.get("address_country")
    else:
        country = stored["address_country"] if stored else None
    region = country or default_region
    parse = text(users.c.phone, normalize=lambda value: normalize_phone(value, region))
    record.column("phone", "phone", parse, nullable=True)


def _check_email(record: Record, stored: Row | None, existing: Existing, seen: _Seen) -> None:
    """E-mails are unique whatever their case (decisions.md, Identifiers and formats)."""
    email = record.values.get("email")
    if email is None:
        return
    once(record, "email", email.lower(), seen.emails, "e-mail")
    holder = existing.user_emails.get(email.lower())
    if holder is not None and (stored is None or holder != stored["id"]):
        owner = existing.user_names_by_id[holder]
        record.error("email", f"{email!r} is already the e-mail of user {owner!r}")


def _check_password(record: Record, stored: Row | None) -> str | None:
    """A plaintext password meets the one rule a person's own choice meets (password_rule.py),
    against the account's username and e-mail (the document's, else the stored one's); an
    argon2 hash (an export's) cannot be checked and is taken as it is."""
    if "password" in record.raw and "passwordHash" in record.raw:
        record.error("password", "give password or passwordHash, not both")
    record.column("passwordHash", "password_hash", password_hash, nullable=True)
    secret: str | None = record.get("password", password)
    if secret is None:
        return None
    email = record.values.get("email", stored["email"] if stored else None)
    problem = password_problem(secret, username=record.values.get("username"), email=email)
    if problem is not None:
        record.error("password", problem)
    return secret


def _check_user_roles(record: Record, role_names: set[str]) -> dict[str, str] | None:
    """Each entry is a role name (scope convention) or {"name", "scope"}."""
    items = record.get("roles", array)
    if items is None:
        return None
    held: dict[str, str] = {}
    for index, item in enumerate(items):
        position = f"roles[{index}]"
        if isinstance(item, dict):
            entry = record.child(position, item, frozenset({"name", "scope"}))
            entry.require("name")
            name = entry.get("name", text(roles.c.name, nonempty=True))
            scope = entry.get("scope", one_of(RoleScope)) or RoleScope.CONVENTION.value
        elif isinstance(item, str):
            name, scope = item, RoleScope.CONVENTION.value
        else:
            record.error(position, f"must be a role name or an object, not {describe(item)}")
            continue
        if name is None:
            continue
        if name not in role_names:
            record.error(position, f"no role is named {name!r}")
        elif name in held:
            record.error(position, f"role {name!r} is listed twice")
        held[name] = scope
    return held


def _check_permissions(record: Record) -> set[str] | None:
    items = record.get("permissions", array)
    if items is None:
        return None
    held: set[str] = set()
    for index, item in enumerate(items):
        position = f"permissions[{index}]"
        if item not in PERMISSIONS:
            allowed = ", ".join(sorted(PERMISSIONS))
            record.error(position, f"{item!r} is not a permission (one of {allowed})")
        elif item in held:
            record.error(position, f"{item!r} is listed twice")
        else:
            held.add(item)
    return held


# --- departments -----------------------------------------------------------------------------


def _check_departments(
    document: dict[str, Any], errors: Errors, existing: Existing, user_keys: set[str]
) -> list[DepartmentRecord]:
    result = []
    names: dict[Any, str] = {}
    ids: dict[Any, str] = {}
    for record in records(document, "departments", errors, DEPARTMENT_KEYS):
        record.require("name")
        record.column("name", "name", text(departments.c.name, nonempty=True))
        record.column("email", "email", text(departments.c.email, normalize=normalize_email))
        record.column("publiclyVisible", "publicly_visible", boolean)
        name = record.values.get("name")
        stored = existing.departments.get(name) if name else None
        if name and stored is None:
            record.require("email")
        holders = existing.department_names_by_id
        department_id = check_id(record, stored, holders, ids, "department")
        leads = _check_usernames(record, "leads", user_keys)
        if name is None:
            continue
        once(record, "name", name, names, "department")
        result.append(DepartmentRecord(record.label, name, department_id, record.values, leads))
    return result


def _check_usernames(record: Record, key: str, user_keys: set[str]) -> set[str] | None:
    items = record.get(key, array)
    if items is None:
        return None
    found: set[str] = set()
    for index, item in enumerate(items):
        position = f"{key}[{index}]"
        if not isinstance(item, str):
            record.error(position, f"must be a username, not {describe(item)}")
        elif item.lower() not in user_keys:
            record.error(position, f"no user is named {item!r}")
        elif item.lower() in found:
            record.error(position, f"{item!r} is listed twice")
        else:
            found.add(item.lower())
    return found


# --- the event and its options ---------------------------------------------------------------


def _check_event(
    document: dict[str, Any], errors: Errors, existing: Existing
) -> EventRecord | None:
    if "event" not in document:
        joins = document.get("volunteers") or wants_sales(document)
        return _default_event(existing) if joins else None
    record = Record(errors, "event", document["event"], EVENT_KEYS)
    record.require("name")
    record.column("name", "name", text(events.c.name, nonempty=True))
    record.column("startsOn", "starts_on", date, nullable=True)
    record.column("endsOn", "ends_on", date, nullable=True)
    starts, ends = record.values.get("starts_on"), record.values.get("ends_on")
    if starts and ends and ends < starts:
        record.error("endsOn", "is before startsOn")
    current = record.get("current", boolean)
    name = record.values.pop("name", None)
    if name is None:
        return None
    make_current = bool(current) or existing.current_event() is None
    event = EventRecord(name, record.values, make_current, _stored_options(existing, name))
    _check_event_options(record, event.options)
    return event


def _default_event(existing: Existing) -> EventRecord:
    """Volunteers without an `event` section join the current event, made if need be."""
    current = existing.current_event()
    name = current["name"] if current else DEFAULT_EVENT_NAME
    return EventRecord(name, {}, current is None, _stored_options(existing, name))


def _stored_options(existing: Existing, event_name: str) -> dict[str, OptionSpec]:
    stored = existing.events.get(event_name)
    rows = existing.event_options.get(stored["id"], {}) if stored else {}
    ordered = sorted(rows.values(), key=lambda row: (row["position"], row["id"]))
    return {row["name"]: OptionSpec(row["name"], row["type"], row["choices"]) for row in ordered}


def _check_event_options(record: Record, catalogue: dict[str, OptionSpec]) -> None:
    declared: dict[Any, str] = {}
    for index, item in enumerate(record.get("options", array) or []):
        option = record.child(f"options[{index}]", item, EVENT_OPTION_KEYS)
        declare_option(option, catalogue, declared, "the event's option")


# --- volunteers ------------------------------------------------------------------------------


def _check_volunteers(
    document: dict[str, Any],
    errors: Errors,
    user_keys: set[str],
    department_names: set[str],
    catalogue: dict[str, OptionSpec],
) -> list[VolunteerRecord]:
    result = []
    seen: dict[Any, str] = {}
    for record in records(document, "volunteers", errors, VOLUNTEER_KEYS):
        record.require("user")
        user = record.get("user", text(users.c.username))
        if user is not None and user.lower() not in user_keys:
            record.error("user", f"no user is named {user!r}")
        record.column("createdAt", "created_at", timestamp)
        record.column("updatedAt", "updated_at", timestamp)
        methods = _check_contact_methods(record)
        assignments = _check_assignments(record, department_names)
        options = check_option_answers(record, catalogue)
        if user is None:
            continue
        once(record, "user", user.lower(), seen, "volunteer")
        result.append(
            VolunteerRecord(
                record.label, user.lower(), record.values, methods, assignments, options
            )
        )
    return result


def _check_contact_methods(record: Record) -> list[tuple[str, str, bool]] | None:
    items = record.get("contactMethods", array)
    if items is None:
        return None
    methods = []
    for index, item in enumerate(items):
        method = record.child(f"contactMethods[{index}]", item, CONTACT_METHOD_KEYS)
        method.require("name", "value")
        name = method.get("name", text(contact_methods.c.name, nonempty=True))
        value = method.get("value", text(contact_methods.c.value))
        primary = method.get("isPrimary", boolean)
        if name is not None and value is not None:
            methods.append((name, value, bool(primary)))
    return methods


def _check_assignments(record: Record, department_names: set[str]) -> dict[str, set[str]] | None:
    items = record.get("departments", array)
    if items is None:
        return None
    assignments: dict[str, set[str]] = {}
    for index, item in enumerate(items):
        assignment = record.child(f"departments[{index}]", item, ASSIGNMENT_KEYS)
        assignment.require("name", "states")
        name = assignment.get("name", text(departments.c.name))
        states = _check_states(assignment)
        if name is None:
            continue
        if name not in department_names:
            assignment.error("name", f"no department is named {name!r}")
        elif name in assignments:
            assignment.error("name", f"department {name!r} is listed twice")
        assignments[name] = states
    return assignments


def _check_states(assignment: Record) -> set[str]:
    """api.md 3.1: each state once; an assignment without states would not be kept."""
    items = assignment.get("states", array) or []
    if "states" in assignment.raw and not items:
        assignment.error("states", "must name at least one state")
    parse = one_of(DepartmentState)
    states: set[str] = set()
    for index, item in enumerate(items):
        try:
            state = parse(item)
        except ValueError as exc:
            assignment.error(f"states[{index}]", str(exc))
            continue
        if state in states:
            assignment.error(f"states[{index}]", f"{state!r} is listed twice")
        states.add(state)
    return states
