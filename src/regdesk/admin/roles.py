"""Roles in the admin area (issue 8), for administrators: the list with how many hold each,
create, rename, the staff flag, delete.

A staff role makes its holders `isStaff` in the volunteer records (decisions.md): the record
documents follow every change here by themselves (the database's triggers, regdesk/documents).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, missing, path_number, see_other, typed
from regdesk.errors import Invalid
from regdesk.roles.models import Role
from regdesk.roles.service import (
    all_roles,
    create_role,
    delete_role,
    holder_count,
    holder_counts,
    update_role,
)
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/roles")

SECTION = "roles"
NOTICES = {
    "created": "The role was created.",
    "saved": "The role was saved.",
    "unchanged": "Nothing changed: the role already had these values.",
    "deleted": "The role was deleted, and taken from everyone who held it.",
}


def _role(request: Request, staffer: Staffer, db: Session, role_id: str) -> Role:
    role = db.get(Role, path_number(role_id))
    if role is None:
        raise missing(request, staffer, SECTION, "role", role_id)
    return role


def _roles_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    *,
    notice: str | None = None,
    values: dict[str, str | bool] | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    return admin_page(
        request,
        "admin/roles.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        roles=all_roles(db),
        holders=holder_counts(db),
        notice=notice,
        values=values or {"name": "", "staff": False},
        errors=errors or {},
    )


@router.get("")
def roles_page(request: Request, staffer: AdminDep, db: PageDb, done: str = "") -> HTMLResponse:
    return _roles_page(request, staffer, db, notice=NOTICES.get(done))


@router.post("")
def create(request: Request, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    name, staff = typed(form, "name"), typed(form, "staff") == "true"
    try:
        create_role(db, staffer.actor, name, staff=staff)
    except Invalid as refused:
        values: dict[str, str | bool] = {"name": name, "staff": staff}
        return _roles_page(request, staffer, db, values=values, errors=refused.errors)
    return see_other("/admin/roles", "created")


def _role_page(
    request: Request,
    staffer: Staffer,
    db: Session,
    role: Role,
    *,
    notice: str | None = None,
    values: dict[str, str | bool] | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    return admin_page(
        request,
        "admin/role.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        role=role,
        holders=holder_count(db, role.id),
        notice=notice,
        values=values or {"name": role.name, "staff": role.staff},
        errors=errors or {},
    )


@router.get("/{role_id}")
def role_page(
    request: Request, role_id: str, staffer: AdminDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    role = _role(request, staffer, db, role_id)
    return _role_page(request, staffer, db, role, notice=NOTICES.get(done))


@router.post("/{role_id}")
def save(request: Request, role_id: str, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    """Rename and set the staff flag (an unticked box is sent as nothing: not staff)."""
    role = _role(request, staffer, db, role_id)
    name, staff = typed(form, "name"), typed(form, "staff") == "true"
    try:
        changed = update_role(db, staffer.actor, role, name=name, staff=staff)
    except Invalid as refused:
        values: dict[str, str | bool] = {"name": name, "staff": staff}
        return _role_page(request, staffer, db, role, values=values, errors=refused.errors)
    return see_other(f"/admin/roles/{role.id}", "saved" if changed else "unchanged")


@router.post("/{role_id}/delete")
def delete(request: Request, role_id: str, staffer: AdminDep, db: PageDb) -> Response:
    role = _role(request, staffer, db, role_id)
    delete_role(db, staffer.actor, role)
    return see_other("/admin/roles", "deleted")
