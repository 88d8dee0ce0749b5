"""The volunteer application form of a signed-in attendee (issue 8): apply, and edit later.

What they send becomes their volunteer record for the current event (api.md 2.5): contact
methods, preferences for the departments open to applicants, and the event's options. The
rules live in volunteers/service.py; this module reads the form and shows it again.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from regdesk.errors import Invalid
from regdesk.volunteers.form import (
    MAX_CONTACT_METHODS,
    TEXT_ANSWER_MAX,
    Application,
    ApplicationForm,
    Submission,
    application_form,
    check_application,
    contact_field,
    department_field,
    option_field,
    save_application,
)
from regdesk.volunteers.models import DepartmentState
from regdesk.web import csrf
from regdesk.web.option_fields import option_view
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb, PageRefused, Visitor, VisitorDep, signed_in

router = APIRouter(include_in_schema=False)

PATH = "/volunteer"
BLANK_ROWS = 2  # empty contact rows offered below the filled ones (no script adds rows)
MAX_ROWS = MAX_CONTACT_METHODS + BLANK_ROWS
# The states a volunteer sets (VOLUNTEER_STATES), as the form words them.
STATE_LABELS = {
    DepartmentState.INTEREST.value: "I'd like to help here",
    DepartmentState.EXPERIENCE.value: "I have experience here",
    DepartmentState.AVOID.value: "I'd rather not be placed here",
}


async def _form_data(request: Request) -> FormData:
    """The posted form, read before the route runs (the route itself is not async)."""
    return await request.form()


FormDep = Annotated[FormData, Depends(_form_data)]


@router.get(PATH)
def volunteer_page(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    saved: Annotated[str | None, Query()] = None,
) -> Response:
    signed = signed_in(request, visitor)
    form = application_form(db, signed.user.id)
    return _page(request, signed, form, _shown(form, form.stored), saved=saved is not None)


@router.post(PATH)
def apply(request: Request, db: PageDb, visitor: VisitorDep, posted: FormDep) -> Response:
    signed = signed_in(request, visitor)
    token = posted.get(csrf.FIELD_NAME)
    if not csrf.session_form_is_genuine(
        request, signed.session_id, token if isinstance(token, str) else None
    ):
        raise PageRefused.forbidden(request, signed)
    form = application_form(db, signed.user.id)
    submission = _read(form, posted)
    try:
        application = check_application(form, submission)
    except Invalid as invalid:
        shown = _shown_submission(form, submission)
        return _page(request, signed, form, shown, errors=invalid.errors, status_code=400)
    save_application(db, signed.actor, signed.user.id, application)
    return RedirectResponse(f"{PATH}?saved", status_code=303)


def _text(posted: FormData, name: str) -> str:
    value = posted.get(name)
    return value if isinstance(value, str) else ""


def _read(form: ApplicationForm, posted: FormData) -> Submission:
    """The submission, as sent: the contact rows up to the last one the form had, the boxes
    ticked for each department the form shows, the values sent for each option it asks."""
    rows = []
    for index in range(MAX_ROWS + MAX_CONTACT_METHODS):
        name_key, value_key = contact_field(index, "name"), contact_field(index, "value")
        if name_key not in posted and value_key not in posted:
            break
        primary = _text(posted, contact_field(index, "primary")) != ""
        rows.append((_text(posted, name_key), _text(posted, value_key), primary))
    preferences = {d.id: _texts(posted, department_field(d.id)) for d in form.departments}
    answers = {o.id: _texts(posted, option_field(o.id)) for o in form.options}
    return Submission(rows, preferences, answers)


def _texts(posted: FormData, name: str) -> list[str]:
    return [value for value in posted.getlist(name) if isinstance(value, str)]


# --- showing the form ------------------------------------------------------------------------


def _shown(form: ApplicationForm, application: Application) -> dict[str, Any]:
    """The form's fields filled with a stored application, and blank contact rows after."""
    rows = [
        {"name": m.name, "value": m.value, "primary": m.is_primary}
        for m in application.contact_methods
    ]
    blank = max(0, min(BLANK_ROWS, MAX_ROWS - len(rows)))
    rows += [{"name": "", "value": "", "primary": False} for _ in range(blank)]
    answers = {}
    for option in form.options:
        if option.id not in application.answers:
            continue
        value = application.answers[option.id]
        answers[option.id] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return {
        "rows": rows,
        "preferences": {d: set(states) for d, states in application.preferences.items()},
        "answers": answers,
    }


def _shown_submission(form: ApplicationForm, submission: Submission) -> dict[str, Any]:
    """The form's fields as they were sent, so that nothing typed is lost."""
    rows = [
        {"name": name, "value": value, "primary": primary}
        for name, value, primary in submission.contact_rows
    ] or [{"name": "", "value": "", "primary": False}]
    return {
        "rows": rows,
        "preferences": {d: set(states) for d, states in submission.preferences.items()},
        "answers": submission.answers,
    }


def _page(
    request: Request,
    visitor: Visitor,
    form: ApplicationForm,
    shown: dict[str, Any],
    *,
    saved: bool = False,
    errors: dict[str, str] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    return render(
        request,
        "volunteer_form.html",
        {
            "visitor": visitor,
            "user": visitor.user,
            "volunteer": form.volunteer,
            "departments": form.departments,
            "options": [
                option_view(o, option_field(o.id), shown["answers"].get(o.id, []))
                for o in form.options
            ],
            "rows": shown["rows"],
            "preferences": shown["preferences"],
            "states": list(STATE_LABELS.items()),
            "errors": errors or {},
            "saved": saved,
            "text_max": TEXT_ANSWER_MAX,
            "contact_field": contact_field,
            "department_field": department_field,
        },
        status_code=status_code,
    )
