"""The volunteer application form: a signed-in attendee's own application to the current
event, as they see it, check it and save it. Writes go through the ORM in the caller's
transaction; the documents' triggers queue each record they touch, so the API shows a change
on its very next read."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import upsert_ignore, utcnow
from regdesk.departments.models import Department
from regdesk.errors import Invalid
from regdesk.events.models import Event, EventOption
from regdesk.events.options import TEXT_ANSWER_MAX as TEXT_ANSWER_MAX  # web/volunteering's
from regdesk.events.options import answer_from_form
from regdesk.events.service import current_event_for_writing, current_options
from regdesk.fields import text
from regdesk.volunteers.models import (
    DepartmentState,
    Volunteer,
    VolunteerContactMethod,
    VolunteerDepartmentState,
    VolunteerOptionValue,
)

VOLUNTEERS: Any = Volunteer.__table__
CONTACT_METHODS: Any = VolunteerContactMethod.__table__


def current_volunteer_id(session: Session | Connection, user_id: int) -> int | None:
    """The id of the user's volunteer application to the current event, if they made one."""
    found: int | None = session.scalar(
        select(Volunteer.id)
        .join(Event, Event.id == Volunteer.event_id)
        .where(Volunteer.user_id == user_id, Event.is_current.is_(True))
    )
    return found


# What a volunteer says of themselves; `assignment` and `request` are set by the department's
# leads and administrators, and the volunteer's form never changes them.
VOLUNTEER_STATES: tuple[str, ...] = (
    DepartmentState.EXPERIENCE.value,
    DepartmentState.INTEREST.value,
    DepartmentState.AVOID.value,
)
MAX_CONTACT_METHODS = 10
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
    stored = stored_application(session, volunteer.id) if volunteer else Application()
    return ApplicationForm(
        visible_departments(session), current_options(session), volunteer, stored
    )


def stored_application(session: Session, volunteer_id: int) -> Application:
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
    return answer_from_form(option.type, option.choices, values)


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
    before = stored_application(session, volunteer.id)
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
