"""Users in the admin area (issue 8), for administrators: find one, see everything about
them, edit their profile (the fields of api.md 2.2), give and take roles and permissions, and
reset their password.

The writes are regdesk.users.service's and regdesk.roles.service's (the API's own role
changes), each with its audit event; the profile is checked by the same rules as an import.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.accounts.passwords import reset_password
from regdesk.admin.access import AdminDep, Staffer
from regdesk.admin.pages import (
    FormDep,
    admin_page,
    clean,
    missing,
    path_number,
    see_other,
    typed,
)
from regdesk.config import Settings
from regdesk.departments.service import departments_led_by
from regdesk.errors import Invalid
from regdesk.oauth.permissions import ADMIN, PAGES, PERMISSIONS, described, permissions_of
from regdesk.oauth.scopes import SCOPES
from regdesk.roles.models import RoleScope
from regdesk.roles.service import all_roles, assign_role, get_role, remove_role, roles_of
from regdesk.schemas import record_id
from regdesk.users.models import User
from regdesk.users.schemas import ADDRESS_FIELDS
from regdesk.users.service import (
    EDITABLE_FIELDS,
    find_users,
    recent_events,
    set_permissions,
    update_user,
)
from regdesk.volunteers.form import current_volunteer_id
from regdesk.web.visitor import PageDb

router = APIRouter(prefix="/users")

SECTION = "users"
SEARCH_MAX = 200
NOTICES = {
    "saved": "The profile was saved.",
    "unchanged": "Nothing changed: the profile already had these values.",
    "role_given": "The role was given.",
    "role_removed": "The role was taken away.",
    "permissions": "The permissions were saved.",
}
# The permissions an administrator can grant, in words (the sensitive scopes' registry entries).
PERMISSION_CHOICES = [
    (ADMIN, "Administrator: everything in the admin area, and every sensitive scope", True),
    *sorted(
        (name, described(name), name not in PAGES and SCOPES[name].sensitive)
        for name in PERMISSIONS
        if name != ADMIN
    ),
]
ROLE_SCOPES = [scope.value for scope in RoleScope]


def _user(request: Request, staffer: Staffer, db: Session, user_id: str) -> User:
    user = db.get(User, path_number(user_id))
    if user is None:
        raise missing(request, staffer, SECTION, "user", user_id)
    return user


# --- finding users ----------------------------------------------------------------------------


@router.get("")
def users_page(
    request: Request,
    staffer: AdminDep,
    db: PageDb,
    q: str = "",
    after: str = "",
    role: str = "",
) -> HTMLResponse:
    """Search by name, username or e-mail (regdesk.users.service.find_users), a page at a time,
    optionally among the holders of one role."""
    text = clean(q)[:SEARCH_MAX]
    role_row = get_role(db, record_id(role) or 0) if role else None
    role_id = role_row.id if role_row is not None else None
    users, next_after = find_users(db, text, record_id(after) or 0, role_id=role_id)
    kept = {"q": text} if text else {}
    if role_id is not None:
        kept["role"] = str(role_id)
    return admin_page(
        request,
        "admin/users.html",
        staffer,
        SECTION,
        users=users,
        q=text,
        role=role_row,
        paged=bool(after),
        first_url=f"/admin/users?{urlencode(kept)}",
        next_url=f"/admin/users?{urlencode({**kept, 'after': next_after})}" if next_after else None,
    )


# --- one user ---------------------------------------------------------------------------------


@router.get("/{user_id}")
def user_page(
    request: Request, user_id: str, staffer: AdminDep, db: PageDb, done: str = ""
) -> HTMLResponse:
    user = _user(request, staffer, db, user_id)
    return _user_view(request, staffer, db, user, notice=NOTICES.get(done))


def _user_view(
    request: Request,
    staffer: Staffer,
    db: Session,
    user: User,
    *,
    notice: str | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    held = roles_of(db, user.id)
    held_ids = {row.id for row in held}
    roles = all_roles(db)
    return admin_page(
        request,
        "admin/user.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        user=user,
        address=[getattr(user, column) for _, column in ADDRESS_FIELDS if getattr(user, column)],
        held_roles=held,
        staff_roles={role.id for role in roles if role.staff},
        other_roles=[role for role in roles if role.id not in held_ids],
        role_scopes=ROLE_SCOPES,
        permissions=set(permissions_of(db, user.id)),
        permission_choices=PERMISSION_CHOICES,
        volunteer_id=current_volunteer_id(db, user.id),
        led_departments=departments_led_by(db, user.id),
        events=recent_events(db, user.id),
        notice=notice,
        errors=errors or {},
    )


@router.post("/{user_id}/roles")
def give_role(
    request: Request, user_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    """Gives the chosen role, for the convention or globally (as PUT /api/v0/users/{id}/roles)."""
    user = _user(request, staffer, db, user_id)
    role = get_role(db, record_id(typed(form, "role")) or 0)
    scope = typed(form, "scope") or RoleScope.CONVENTION.value
    if role is None or scope not in ROLE_SCOPES:
        problem = "Choose one of the roles listed." if role is None else "Choose a scope."
        return _user_view(request, staffer, db, user, errors={"role": problem})
    assign_role(db, staffer.actor, user.id, role, scope)
    return see_other(f"/admin/users/{user.id}", "role_given")


@router.post("/{user_id}/roles/{role_id}/remove")
def take_role(
    request: Request, user_id: str, role_id: str, staffer: AdminDep, db: PageDb
) -> Response:
    user = _user(request, staffer, db, user_id)
    role = get_role(db, path_number(role_id))
    if role is None:
        raise missing(request, staffer, "roles", "role", role_id)
    remove_role(db, staffer.actor, user.id, role)
    return see_other(f"/admin/users/{user.id}", "role_removed")


@router.post("/{user_id}/permissions")
def save_permissions(
    request: Request, user_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    """The user holds exactly the ticked permissions afterwards."""
    user = _user(request, staffer, db, user_id)
    ticked = [value for value in form.getlist("permission") if isinstance(value, str)]
    try:
        set_permissions(db, staffer.actor, user.id, ticked)
    except Invalid as refused:
        return _user_view(request, staffer, db, user, errors=refused.errors)
    return see_other(f"/admin/users/{user.id}", "permissions")


# --- the profile ------------------------------------------------------------------------------


def _profile(user: User) -> dict[str, Any]:
    """The form's values for the stored profile, by the API's field names."""
    return {
        "username": user.username,
        "email": user.email,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "preferredName": user.preferred_name,
        "phone": user.phone,
        "verified": user.verified,
        **{name: getattr(user, column) for name, column in ADDRESS_FIELDS},
    }


def _edit_page(
    request: Request,
    staffer: Staffer,
    user: User,
    values: dict[str, Any],
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    settings: Settings = request.app.state.settings
    return admin_page(
        request,
        "admin/user_edit.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        user=user,
        values=values,
        errors=errors or {},
        phone_region=settings.default_phone_region,
    )


@router.get("/{user_id}/edit")
def edit_page(request: Request, user_id: str, staffer: AdminDep, db: PageDb) -> HTMLResponse:
    user = _user(request, staffer, db, user_id)
    return _edit_page(request, staffer, user, _profile(user))


@router.post("/{user_id}/edit")
def edit(request: Request, user_id: str, staffer: AdminDep, db: PageDb, form: FormDep) -> Response:
    """Saves the profile; an empty field is no value (null in the API) where one may be."""
    user = _user(request, staffer, db, user_id)
    values: dict[str, Any] = {name: typed(form, name) or None for name in EDITABLE_FIELDS}
    values["verified"] = typed(form, "verified") == "true"
    settings: Settings = request.app.state.settings
    try:
        changed = update_user(db, staffer.actor, user, values, settings.default_phone_region)
    except Invalid as refused:
        return _edit_page(request, staffer, user, values, refused.errors)
    return see_other(f"/admin/users/{user.id}", "saved" if changed else "unchanged")


# --- the password -----------------------------------------------------------------------------


@router.get("/{user_id}/password")
def password_page(request: Request, user_id: str, staffer: AdminDep, db: PageDb) -> HTMLResponse:
    user = _user(request, staffer, db, user_id)
    return _password_page(request, staffer, user, "generate", {})


def _password_page(
    request: Request, staffer: Staffer, user: User, method: str, errors: dict[str, str]
) -> HTMLResponse:
    return admin_page(
        request,
        "admin/user_password.html",
        staffer,
        SECTION,
        status_code=400 if errors else 200,
        user=user,
        method=method,
        errors=errors,
        password_min=PASSWORD_MIN,
    )


@router.post("/{user_id}/password")
def new_password(
    request: Request, user_id: str, staffer: AdminDep, db: PageDb, form: FormDep
) -> Response:
    """Sets the typed password, or a generated one shown this once: the answer to this POST
    itself (never a redirect), on a page no cache keeps (`no-store`, as every page)."""
    user = _user(request, staffer, db, user_id)
    method = "set" if typed(form, "method") == "set" else "generate"
    typed_password = form.get("password")
    chosen = typed_password if isinstance(typed_password, str) else ""
    try:
        reset = reset_password(
            db,
            staffer.actor,
            user,
            chosen if method == "set" else None,
            site=request.app.state.settings.issuer,
        )
    except Invalid as refused:
        return _password_page(request, staffer, user, method, refused.errors)
    return admin_page(
        request,
        "admin/user_password_done.html",
        staffer,
        SECTION,
        user=user,
        generated=reset.password if method == "generate" else None,
        grants_revoked=reset.grants_revoked,
    )
