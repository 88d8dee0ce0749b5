"""Volunteer departments in the admin area (issue 8).

Administrators see and create every department, rename it, and choose its leads. A lead
sees the departments they lead and edits their contact e-mail and whether they are shown to
everyone applying (api.md 2.6 `publiclyVisible`); another department's page is not theirs.
The writes are regdesk.departments.service's, each with its audit event.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, StaffDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, missing, path_number, see_other, typed
from regdesk.departments.models import Department
from regdesk.departments.service import (
    add_lead,
    create_department,
    departments_with_leads,
    leads_of,
    remove_lead,
    update_department,
)
from regdesk.errors import Invalid
from regdesk.web.visitor import PageDb, PageRefused

router = APIRouter(prefix="/departments")

SECTION = "departments"
NOTICES = {
    "created": "The department was created.",
    "saved": "The department was saved.",
    "unchanged": "Nothing changed: the department already had these values.",
    "lead_added": "The lead was added.",
    "lead_removed": "The lead was removed.",
}
Values = dict[str, str | bool]


def _department(request: Request, staffer: Staffer, db: Session, department_id: str) -> Department:
    """The department, if this organizer may manage it (an administrator, or its lead)."""
    department = db.get(Department, path_number(department_id))
    if department is None:
        if not staffer.is_admin:  # a lead learns nothing about ids that are not theirs
            raise PageRefused.not_permitted(request, staffer.visitor)
        raise missing(request, staffer, SECTION, "department", department_id)
    if not staffer.may_manage_department(department.id):
        raise PageRefused.not_permitted(request, staffer.visitor)
    return department


def _list_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    *,
    notice: str | None = None,
    values: Values | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    only = None if staffer.is_admin else staffer.led_departments
    return admin_page(
        request,
        "admin/departments.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        departments=departments_with_leads(db, only),
        notice=notice,
        values=values or {"name": "", "email": "", "publiclyVisible": True},
        errors=errors or {},
    )


@router.get("")
def departments_page(
    request: Request, staffer: StaffDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    return _list_page(request, staffer, db, notice=NOTICES.get(done))


@router.post("")
def create(request: Request, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    values: Values = {
        "name": typed(form, "name"),
        "email": typed(form, "email"),
        "publiclyVisible": typed(form, "publiclyVisible") == "true",
    }
    try:
        department = create_department(
            db,
            staffer.actor,
            name=str(values["name"]),
            email=str(values["email"]),
            publicly_visible=bool(values["publiclyVisible"]),
        )
    except Invalid as refused:
        return _list_page(request, staffer, db, values=values, errors=refused.errors)
    return see_other(f"/admin/departments/{department.id}", "created")


def _department_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    department: Department,
    *,
    notice: str | None = None,
    values: Values | None = None,
    errors: dict[str, str] | None = None,
    lead: str = "",
) -> HTMLResponse:
    stored: Values = {
        "name": department.name,
        "email": department.email,
        "publiclyVisible": department.publicly_visible,
    }
    return admin_page(
        request,
        "admin/department.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        department=department,
        leads=leads_of(db, department.id),
        notice=notice,
        values=values or stored,
        errors=errors or {},
        lead=lead,
    )


@router.get("/{department_id}")
def department_page(
    request: Request, department_id: str, staffer: StaffDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    department = _department(request, staffer, db, department_id)
    return _department_page(request, staffer, db, department, notice=NOTICES.get(done))


@router.post("/{department_id}")
def save(
    request: Request, department_id: str, staffer: StaffDep, db: PageDb, form: FormDep
) -> Response:
    """E-mail and visibility (its leads too); the name only by an administrator."""
    department = _department(request, staffer, db, department_id)
    name = typed(form, "name") if staffer.is_admin else None
    values: Values = {
        "name": department.name if name is None else name,
        "email": typed(form, "email"),
        "publiclyVisible": typed(form, "publiclyVisible") == "true",
    }
    try:
        changed = update_department(
            db,
            staffer.actor,
            department,
            name=name,
            email=str(values["email"]),
            publicly_visible=bool(values["publiclyVisible"]),
        )
    except Invalid as refused:
        return _department_page(
            request, staffer, db, department, values=values, errors=refused.errors
        )
    return see_other(f"/admin/departments/{department.id}", "saved" if changed else "unchanged")


@router.post("/{department_id}/leads")
def add(
    request: Request, department_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    department = _department(request, staffer, db, department_id)
    try:
        add_lead(db, staffer.actor, department, typed(form, "username"))
    except Invalid as refused:
        return _department_page(
            request, staffer, db, department, errors=refused.errors, lead=typed(form, "username")
        )
    return see_other(f"/admin/departments/{department.id}", "lead_added")


@router.post("/{department_id}/leads/{user_id}/remove")
def remove(
    request: Request, department_id: str, user_id: str, staffer: AdminDep, db: PageDb
) -> Response:
    department = _department(request, staffer, db, department_id)
    remove_lead(db, staffer.actor, department, path_number(user_id))
    return see_other(f"/admin/departments/{department.id}", "lead_removed")
