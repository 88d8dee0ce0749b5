"""Volunteer applications in the admin area (issue 8): the list with its filters, one
application, and the form that sets a department's states (api.md 3.1) on it.

An administrator sees every application of the current event. A department's lead sees the
applications holding a state in a department they lead, and only those departments' states;
they set states in their own departments only. The queries and writes are
regdesk.volunteers.service's.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import StaffDep, Staffer
from regdesk.admin.pages import missing, staff_context
from regdesk.departments.models import Department
from regdesk.volunteers.models import DepartmentState, Volunteer
from regdesk.volunteers.review import (
    application_detail,
    departments_by_name,
    departments_of,
    search_applications,
    set_department_states,
)
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb, PageRefused

router = APIRouter(prefix="/volunteers")

PER_PAGE = 50
SEARCH_MAX = 100
STATES = [state.value for state in DepartmentState]
NOTICES = {
    "saved": "The department's states were saved.",
    "unchanged": "Nothing changed: the department already had these states.",
}


def _context(staffer: Staffer, **context: Any) -> dict[str, Any]:
    return staff_context(staffer, states=STATES, **context)


def _number(text: str | None) -> int | None:
    if text is None or not (text.isascii() and text.isdigit() and 0 < len(text) < 10):
        return None
    return int(text)


def _within(staffer: Staffer) -> frozenset[int] | None:
    """The departments whose states this organizer sees: a lead's own, or all (None)."""
    return None if staffer.is_admin else staffer.led_departments


@router.get("")
def volunteers_page(
    request: Request,
    staffer: StaffDep,
    db: PageDb,
    department: Annotated[str, Query()] = "",
    state: Annotated[str, Query()] = "",
    q: Annotated[str, Query()] = "",
    page: Annotated[str, Query()] = "1",
) -> HTMLResponse:
    within = _within(staffer)
    departments = departments_by_name(db, within)
    department_id = _number(department)
    if department and department_id is None:
        department_id = 0  # names no department: nothing matches
    if department_id and within is not None and department_id not in within:
        raise PageRefused.not_permitted(request, staffer.visitor)
    chosen_state = state if state in STATES else ""
    name = q.strip()[:SEARCH_MAX]
    number = _number(page) or 1
    found = search_applications(
        db,
        within=within,
        department_id=department_id,
        state=chosen_state or None,
        name=name,
        offset=(number - 1) * PER_PAGE,
        limit=PER_PAGE,
    )
    pages = max(1, -(-found.total // PER_PAGE))
    filters = {"department": department, "state": chosen_state, "q": name}

    def link(to: int) -> str:
        kept = {key: value for key, value in filters.items() if value}
        return "/admin/volunteers?" + urlencode({**kept, "page": to}) if to > 1 or kept else ""

    return render(
        request,
        "admin/volunteers.html",
        _context(
            staffer,
            departments=departments,
            filters=filters,
            filtered=any(filters.values()),
            applicants=found.applicants,
            total=found.total,
            page=number,
            pages=pages,
            previous=(link(number - 1) or "/admin/volunteers") if number > 1 else None,
            next=link(number + 1) if number < pages else None,
        ),
    )


def _visible(db: Session, staffer: Staffer, volunteer: Volunteer) -> frozenset[int] | None:
    """The departments of this volunteer the organizer may see (None: all of them, an
    administrator), or an empty set when a lead may not see the volunteer at all."""
    if staffer.is_admin:
        return None
    return frozenset(departments_of(db, volunteer.id) & staffer.led_departments)


@router.get("/{volunteer_id}")
def volunteer_page(
    request: Request,
    staffer: StaffDep,
    db: PageDb,
    volunteer_id: str,
    done: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    number = _number(volunteer_id)
    detail = application_detail(db, number) if number is not None else None
    if detail is None:
        raise _missing(request, staffer, "volunteer application", volunteer_id)
    visible = _visible(db, staffer, detail.volunteer)
    if visible is not None and not visible:
        raise PageRefused.not_permitted(request, staffer.visitor)
    managed = departments_by_name(db, _within(staffer))
    holding = [(d, detail.departments[d.id]) for d in managed if d.id in detail.departments]
    others = [d for d in managed if d.id not in detail.departments]
    return render(
        request,
        "admin/volunteer.html",
        _context(
            staffer,
            detail=detail,
            user=detail.user,
            holding=holding,
            others=others,
            notice=NOTICES.get(done or ""),
        ),
    )


@router.post("/{volunteer_id}/departments/{department_id}")
def set_states(
    request: Request,
    staffer: StaffDep,
    db: PageDb,
    volunteer_id: str,
    department_id: str,
    states: Annotated[list[str] | None, Form()] = None,
) -> Response:
    """Sets one department's states on the application: its leads and administrators only."""
    department_number = _number(department_id)
    if department_number is None or not staffer.may_manage_department(department_number):
        if not staffer.is_admin:
            raise PageRefused.not_permitted(request, staffer.visitor)
        raise _missing(request, staffer, "department", department_id)
    number = _number(volunteer_id)
    volunteer = db.get(Volunteer, number) if number is not None else None
    department = db.get(Department, department_number)
    if volunteer is None or department is None or _visible(db, staffer, volunteer) == frozenset():
        if not staffer.is_admin:  # a lead learns nothing of applications they may not see
            raise PageRefused.not_permitted(request, staffer.visitor)
        if department is None:
            raise _missing(request, staffer, "department", department_id)
        raise _missing(request, staffer, "volunteer application", volunteer_id)
    wanted = {state for state in states or [] if state in STATES}
    added, removed = set_department_states(db, staffer.actor, volunteer, department.id, wanted)
    if _visible(db, staffer, volunteer) == frozenset():
        return RedirectResponse("/admin/volunteers", status_code=303)
    done = "saved" if added or removed else "unchanged"
    return RedirectResponse(
        f"/admin/volunteers/{volunteer.id}?done={done}#department-{department.id}",
        status_code=303,
    )


def _missing(request: Request, staffer: Staffer, what: str, path_id: str) -> PageRefused:
    section = "departments" if what == "department" else "volunteers"
    return missing(request, staffer, section, what, path_id)
