"""The current event's registration flags in the admin area (registrations.md: organizer-
defined `{id, shortName}`, such as "fursuits"), for administrators: list, add, rename, delete.
Which registrations hold a flag is set on the registration's page (admin/registrations.py).
The writes are regdesk.registrations.flags', each with its audit event.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import FormDep, admin_page, missing, path_number, see_other, typed
from regdesk.errors import Invalid
from regdesk.events.service import current_event
from regdesk.registrations.flags import (
    create_flag,
    delete_flag,
    find_current_flag,
    flags_of,
    holder_counts,
    rename_flag,
)
from regdesk.registrations.models import RegistrationFlag
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/flags")

SECTION = "registration-options"  # flags are set up beside the registration options
PAGE = "/admin/flags"
NOTICES = {
    "created": "The flag was added.",
    "renamed": "The flag was renamed.",
    "unchanged": "Nothing changed: the flag already had this name.",
    "deleted": "The flag was deleted, and taken off every registration that held it.",
}


def _flag(request: Request, staffer: Staffer, db: Session, flag_id: str) -> RegistrationFlag:
    flag = find_current_flag(db, path_number(flag_id))
    if flag is None:
        raise missing(request, staffer, "flags", "flag", flag_id)
    return flag


def _page(
    request: Request,
    staffer: Staffer,
    db: Session,
    *,
    notice: str | None = None,
    new_name: str = "",
    errors: dict[str, str] | None = None,
    renaming: tuple[int, str] | None = None,
) -> HTMLResponse:
    """The list with the add form; `renaming` (flag id, name typed) shows a refused rename in
    its row, with its error."""
    event = current_event(db)
    flags = flags_of(db, event.id) if event else []
    return admin_page(
        request,
        "admin/flags.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        flags=flags,
        holders=holder_counts(db, [flag.id for flag in flags]),
        notice=notice,
        new_name=new_name,
        errors=errors or {},
        renaming=renaming,
    )


@router.get("")
def flags_page(request: Request, staffer: AdminDep, db: PageDb, done: str = "") -> HTMLResponse:
    return _page(request, staffer, db, notice=NOTICES.get(done))


@router.post("")
def add_flag(request: Request, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    name = typed(form, "shortName")
    try:
        create_flag(db, staffer.actor, name)
    except Invalid as refused:
        return _page(request, staffer, db, new_name=name, errors=refused.errors)
    return see_other(PAGE, "created")


@router.post("/{flag_id}")
def change_flag(
    request: Request, flag_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    flag = _flag(request, staffer, db, flag_id)
    name = typed(form, "shortName")
    try:
        renamed = rename_flag(db, staffer.actor, flag, name)
    except Invalid as refused:
        errors = {f"flag-{flag.id}": refused.errors["shortName"]}
        return _page(request, staffer, db, errors=errors, renaming=(flag.id, name))
    return see_other(PAGE, "renamed" if renamed else "unchanged")


@router.post("/{flag_id}/delete")
def remove_flag(request: Request, flag_id: str, staffer: AdminDep, db: PageDb) -> Response:
    flag = _flag(request, staffer, db, flag_id)
    delete_flag(db, staffer.actor, flag)
    return see_other(PAGE, "deleted")
