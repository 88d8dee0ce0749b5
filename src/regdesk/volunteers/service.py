"""Volunteer applications of the current event: read a page at a time (the API), written by
the volunteer's own form, and reviewed by organizers (the admin area).

A page is one query whatever its depth: the ready documents of the next volunteers (keyset on
ix_volunteers_event_id_id, documents/models.py). Rendering a record from its tables, for the
documents and for any a reader finds missing, costs the same few queries for a whole batch:
the volunteers with their users, then the contact methods, department states, options and staff
flags of the batch, each in one query.

Writes go through the ORM in the caller's transaction; the documents' triggers (migration 0003)
queue each record they touch, so the API shows a change on its very next read.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Row, delete, func, or_, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import LoopReads, Query, upsert_ignore, utcnow
from regdesk.departments.models import Department
from regdesk.documents.reading import complete
from regdesk.events.models import Event, EventOption, OptionType, option_value_error
from regdesk.events.service import (
    CHOICE_MAX_LENGTH,
    current_event,
    current_event_for_writing,
    current_options,
    event_options,
)
from regdesk.formats import as_json
from regdesk.invalid import Invalid
from regdesk.roles.models import Role, UserRole
from regdesk.transfer.records import text
from regdesk.users.models import User
from regdesk.volunteers.models import (
    STATE_ORDER,
    DepartmentState,
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


# The current event's applications in id order, seeking ix_volunteers_event_id_id (`= :current`
# lets SQLite answer the subquery from the partial index uq_events_current). Each body is looked
# up by key: as a join, PostgreSQL would merge with the documents from the first one on, a
# cost that grows with the page's depth. A record still queued (a change committed beside a
# refresh, by SQL that took no part in it) is rendered from its tables (documents/models.py).
PAGE = Query("""
    SELECT v.id, (SELECT body FROM volunteer_documents d WHERE d.volunteer_id = v.id
                  AND NOT EXISTS (SELECT 1 FROM document_queue q
                                  WHERE q.kind = 'volunteer' AND q.key = v.id))
    FROM volunteers v
    WHERE v.event_id = (SELECT id FROM events WHERE is_current = :current) AND v.id > :after
    ORDER BY v.id LIMIT :limit
""")
OF_USER = Query("""
    SELECT u.id, v.id, (SELECT body FROM volunteer_documents d WHERE d.volunteer_id = v.id
                        AND NOT EXISTS (SELECT 1 FROM document_queue q
                                        WHERE q.kind = 'volunteer' AND q.key = v.id))
    FROM users u
    LEFT JOIN volunteers v
        ON v.user_id = u.id AND v.event_id = (SELECT id FROM events WHERE is_current = :current)
    WHERE u.id = :user_id
""")


def volunteer_page(reads: LoopReads, after_id: int, limit: int) -> tuple[list[str], int | None]:
    """The JSON records of the current event's volunteers after `after_id`, and the id to
    continue after when more follow."""
    rows = reads.all(PAGE, current=True, after=after_id, limit=limit + 1)
    page = rows[:limit]
    bodies = complete(reads, page, volunteer_documents)
    return bodies, (page[-1][0] if len(rows) > limit else None)


def volunteer_of_user(reads: LoopReads, user_id: int) -> tuple[bool, str | None]:
    """Whether the user exists, and the JSON record of their application for the current
    event if they made one."""
    row = reads.first(OF_USER, current=True, user_id=user_id)
    if row is None:
        return False, None
    _, volunteer_id, body = row
    if not volunteer_id:
        return True, None
    found = complete(reads, [(volunteer_id, body)], volunteer_documents)
    return True, (found[0] if found else None)


def volunteer_documents(bind: Bind, ids: Iterable[int]) -> dict[int, str]:
    """The JSON records of the volunteers with these ids (those that exist), from the tables."""
    wanted = sorted(ids)
    rendered = {}
    for start in range(0, len(wanted), BATCH):
        rows = bind.execute(
            VOLUNTEER_WITH_USER.where(Volunteer.id.in_(wanted[start : start + BATCH]))
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
            .where(VolunteerContactMethod.volunteer_id.in_(ids))
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
            .where(VolunteerOptionValue.volunteer_id.in_(ids))
            .order_by(VolunteerOptionValue.volunteer_id, EventOption.position, EventOption.id)
        )
    )
    departments = _departments(bind, ids)
    staff = set(
        bind.scalars(
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


# --- the application form: a signed-in attendee's own application ------------------------------

# What a volunteer says of themselves; `assignment` and `request` are set by the department's
# leads and administrators, and the volunteer's form never changes them.
VOLUNTEER_STATES: tuple[str, ...] = (
    DepartmentState.EXPERIENCE.value,
    DepartmentState.INTEREST.value,
    DepartmentState.AVOID.value,
)
MAX_CONTACT_METHODS = 10
TEXT_ANSWER_MAX = 1000
MULTI_ANSWER_MAX = 50
NUMBER_MAX = 10**12
NUMBER_TEXT_MAX = 40
_contact_name = text(CONTACT_METHODS.c.name, nonempty=True)
_contact_value = text(CONTACT_METHODS.c.value, nonempty=True)


def contact_field(index: int, part: str) -> str:
    """The form's field names, which are also the keys of its errors (Invalid.errors)."""
    return f"contact-{index}-{part}"


def department_field(department_id: int) -> str:
    return f"department-{department_id}"


def option_field(option_id: int) -> str:
    return f"option-{option_id}"


@dataclass(frozen=True)
class ContactMethod:
    name: str
    value: str
    is_primary: bool = False


@dataclass
class Application:
    """What a volunteer tells the event about themselves (api.md 2.5, less the user)."""

    contact_methods: list[ContactMethod] = field(default_factory=list)
    preferences: dict[int, set[str]] = field(default_factory=dict)  # department id -> states
    answers: dict[int, Any] = field(default_factory=dict)  # option id -> value


@dataclass
class ApplicationForm:
    """The form as it stands for one user: the departments and options it asks about (those
    of the current event, and the departments visible to applicants), and their answers."""

    departments: list[Department]
    options: list[EventOption]
    volunteer: Volunteer | None
    stored: Application


@dataclass
class Submission:
    """The form as it was sent: every row and box as typed, blank contact rows included."""

    contact_rows: list[tuple[str, str, bool]]  # name, value, "preferred" ticked
    preferences: dict[int, list[str]]  # department id -> the states ticked
    answers: dict[int, list[str]]  # option id -> the values sent (one, or several for multi)


def current_application(session: Session, user_id: int) -> Volunteer | None:
    return session.scalars(
        select(Volunteer)
        .join(Event, Event.id == Volunteer.event_id)
        .where(Volunteer.user_id == user_id, Event.is_current.is_(True))
    ).first()


def visible_departments(session: Session) -> list[Department]:
    """The departments an applicant may state a preference for (api.md 2.6, publiclyVisible)."""
    return list(
        session.scalars(
            select(Department)
            .where(Department.publicly_visible.is_(True))
            .order_by(Department.name, Department.id)
        )
    )


def application_form(session: Session, user_id: int) -> ApplicationForm:
    volunteer = current_application(session, user_id)
    stored = _stored_application(session, volunteer.id) if volunteer else Application()
    return ApplicationForm(
        visible_departments(session), current_options(session), volunteer, stored
    )


def _stored_application(session: Session, volunteer_id: int) -> Application:
    methods = [
        ContactMethod(row.name, row.value, row.is_primary)
        for row in session.scalars(
            select(VolunteerContactMethod)
            .where(VolunteerContactMethod.volunteer_id == volunteer_id)
            .order_by(VolunteerContactMethod.position)
        )
    ]
    preferences: dict[int, set[str]] = defaultdict(set)
    for department_id, state in session.execute(
        select(VolunteerDepartmentState.department_id, VolunteerDepartmentState.state).where(
            VolunteerDepartmentState.volunteer_id == volunteer_id,
            VolunteerDepartmentState.state.in_(VOLUNTEER_STATES),
        )
    ):
        preferences[department_id].add(state)
    answers: dict[int, Any] = {
        row.option_id: row.value
        for row in session.execute(
            select(VolunteerOptionValue.option_id, VolunteerOptionValue.value).where(
                VolunteerOptionValue.volunteer_id == volunteer_id
            )
        )
    }
    return Application(methods, dict(preferences), answers)


def check_application(form: ApplicationForm, submission: Submission) -> Application:
    """The application in the submission, or Invalid naming each bad field (by form field)."""
    errors: dict[str, str] = {}
    application = Application(
        _check_contacts(submission.contact_rows, errors),
        _check_preferences(form.departments, submission.preferences, errors),
        _check_answers(form.options, submission.answers, errors),
    )
    if errors:
        raise Invalid(errors)
    return application


def _check_contacts(
    rows: list[tuple[str, str, bool]], errors: dict[str, str]
) -> list[ContactMethod]:
    """Rows left blank are not contact methods; a half-filled one is a mistake."""
    methods = []
    for index, (raw_name, raw_value, primary) in enumerate(rows):
        name, value = raw_name.strip(), raw_value.strip()
        if not name and not value:
            continue
        for part, typed, parse, what in (
            ("name", name, _contact_name, "a name for this contact method, such as Discord"),
            ("value", value, _contact_value, "how to reach you there"),
        ):
            if not typed:
                errors[contact_field(index, part)] = f"Enter {what}."
                continue
            try:
                parse(typed)
            except ValueError as exc:
                errors[contact_field(index, part)] = f"This {exc}."
        methods.append(ContactMethod(name, value, primary))
    if len(methods) > MAX_CONTACT_METHODS:
        errors["contact"] = f"Give at most {MAX_CONTACT_METHODS} contact methods."
    if sum(method.is_primary for method in methods) > 1:
        errors["contact"] = "Mark only one contact method as the preferred one."
    return methods


def _check_preferences(
    departments: list[Department], ticked: dict[int, list[str]], errors: dict[str, str]
) -> dict[int, set[str]]:
    preferences: dict[int, set[str]] = {}
    for department in departments:
        states = set(ticked.get(department.id, ()))
        key = department_field(department.id)
        if not states <= set(VOLUNTEER_STATES):
            errors[key] = "Choose among interest, experience and avoid."
        elif {DepartmentState.INTEREST, DepartmentState.AVOID} <= states:
            errors[key] = f"Choose either interest in {department.name} or to avoid it, not both."
        if states:
            preferences[department.id] = states
    return preferences


def _check_answers(
    options: list[EventOption], sent: dict[int, list[str]], errors: dict[str, str]
) -> dict[int, Any]:
    answers: dict[int, Any] = {}
    for option in options:
        try:
            value = _answer(option, sent.get(option.id, []))
        except ValueError as exc:
            errors[option_field(option.id)] = str(exc)
            continue
        if value is not None:
            answers[option.id] = value
    return answers


def _answer(option: EventOption, values: list[str]) -> Any:
    """The stored value of an option's answer (None: not answered), or ValueError saying why
    it does not fit (api.md 2.5, Option: a number, a string, or an array of strings)."""
    given: Any
    if option.type == OptionType.MULTI:
        if option.choices is None:  # any values: one per line of a text box
            values = [line for value in values for line in value.splitlines()]
        given = list(dict.fromkeys(value.strip() for value in values if value.strip()))
        if not given:
            return None
        if len(given) > MULTI_ANSWER_MAX:
            raise ValueError(f"Give at most {MULTI_ANSWER_MAX} answers.")
        if any(len(value) > CHOICE_MAX_LENGTH for value in given):
            raise ValueError(f"Each answer may be at most {CHOICE_MAX_LENGTH} characters long.")
    else:
        present = [value.strip() for value in values if value.strip()]
        if not present:
            return None
        if len(present) > 1:
            raise ValueError("Give one answer.")
        given = present[0]
        if option.type == OptionType.NUMBER:
            given = _number(given)
        elif len(given) > TEXT_ANSWER_MAX:
            raise ValueError(f"The answer may be at most {TEXT_ANSWER_MAX} characters long.")
    problem = option_value_error(option.type, option.choices, given)
    if problem:
        if option.choices is not None and option.type in (OptionType.SELECT, OptionType.MULTI):
            raise ValueError("Choose among the choices given.")
        raise ValueError(f"The answer {problem}.")
    return given


def _number(typed: str) -> int | float:
    """A whole number stays whole (12, not 12.0) in the record."""
    message = "Enter a number, such as 12 or 7.5."
    if len(typed) > NUMBER_TEXT_MAX:
        raise ValueError(message)
    try:
        number: int | float = int(typed)
    except ValueError:
        try:
            number = float(typed)
        except ValueError:
            raise ValueError(message) from None
        if not math.isfinite(number):
            raise ValueError(message) from None
        if number.is_integer():
            number = int(number)
    if abs(number) > NUMBER_MAX:
        raise ValueError(f"Enter a number between -{NUMBER_MAX:,} and {NUMBER_MAX:,}.")
    return number


def save_application(
    session: Session, actor: Actor, user_id: int, application: Application
) -> Volunteer:
    """Creates or replaces the user's application for the current event, in the caller's
    transaction: its contact methods, its preferences for the departments applicants see,
    and its answers. States set by leads (assignment, request) and preferences for departments
    hidden since are kept."""
    event = current_event_for_writing(session)
    volunteer = current_application(session, user_id)
    now = utcnow()
    created = volunteer is None
    if volunteer is None:
        # Two forms sent at once: the second finds the first one's row instead of failing.
        upsert_ignore(
            session,
            VOLUNTEERS,
            {"event_id": event.id, "user_id": user_id, "created_at": now, "updated_at": now},
        )
        volunteer = current_application(session, user_id)
        assert volunteer is not None
    before = _stored_application(session, volunteer.id)
    shown = [department.id for department in visible_departments(session)]
    preferences = {d: s for d, s in application.preferences.items() if d in shown}
    kept = {d: s for d, s in before.preferences.items() if d not in shown}
    changed = [
        name
        for name, old, new in (
            ("contactMethods", before.contact_methods, application.contact_methods),
            ("departments", {**before.preferences, **kept}, {**preferences, **kept}),
            ("options", before.answers, application.answers),
        )
        if old != new
    ]
    if not changed and not created:
        return volunteer
    if "contactMethods" in changed:
        session.execute(
            delete(VolunteerContactMethod).where(
                VolunteerContactMethod.volunteer_id == volunteer.id
            )
        )
        session.add_all(
            VolunteerContactMethod(
                volunteer_id=volunteer.id,
                position=position,
                name=method.name,
                value=method.value,
                is_primary=method.is_primary,
            )
            for position, method in enumerate(application.contact_methods)
        )
    if "departments" in changed:
        session.execute(
            delete(VolunteerDepartmentState).where(
                VolunteerDepartmentState.volunteer_id == volunteer.id,
                VolunteerDepartmentState.department_id.in_(shown),
                VolunteerDepartmentState.state.in_(VOLUNTEER_STATES),
            )
        )
        session.add_all(
            VolunteerDepartmentState(volunteer_id=volunteer.id, department_id=d, state=state)
            for d, states in preferences.items()
            for state in sorted(states)
        )
    if "options" in changed:
        session.execute(
            delete(VolunteerOptionValue).where(VolunteerOptionValue.volunteer_id == volunteer.id)
        )
        session.add_all(
            VolunteerOptionValue(volunteer_id=volunteer.id, option_id=option_id, value=value)
            for option_id, value in application.answers.items()
        )
    volunteer.updated_at = now
    session.flush()
    record_event(
        session,
        actor,
        "volunteer.applied" if created else "volunteer.application_changed",
        target_type="volunteer",
        target_id=volunteer.id,
        details={"user": user_id, "changed": changed},
    )
    return volunteer


# --- reviewing applications: administrators, and leads for their departments ------------------

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
    stored = _stored_application(session, volunteer.id)
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
