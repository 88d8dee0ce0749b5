"""Who may use the admin pages: the `admin` permission, or leading a department.

A signed-out visitor is sent to the login page and comes back; a signed-in one without the
right is answered 403 with a page saying so; staff without a second factor, when one is
required (web/staff_factor.py), are sent to add one. Form actions also check the CSRF token
(`regdesk.web.csrf`) before anything is read from the form, so a forged POST changes nothing.
A form whose body may be large (the import's upload) first asks `AskedByAdministrator`, so that
only an administrator may send that much (regdesk.bodies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from regdesk.audit.service import Actor
from regdesk.db import write_session
from regdesk.oauth.permissions import ADMIN, permissions_of
from regdesk.web import csrf
from regdesk.web.sessions import COOKIE_NAME, find_session
from regdesk.web.staff_factor import second_factor_missing, to_second_factor_set_up
from regdesk.web.visitor import PageRefused, Visitor, VisitorDep, signed_in


@dataclass(frozen=True)
class Staffer:
    """A signed-in organizer: an administrator, a lead of some departments, or both."""

    visitor: Visitor
    is_admin: bool
    led_departments: frozenset[int]

    @property
    def actor(self) -> Actor:
        return self.visitor.actor

    @property
    def csrf_token(self) -> str:
        return self.visitor.csrf_token

    def may_manage_department(self, department_id: int) -> bool:
        return self.is_admin or department_id in self.led_departments


def _organizer(request: Request, visitor: VisitorDep) -> Staffer:
    signed = signed_in(request, visitor)
    if not signed.is_organizer:
        raise PageRefused.not_permitted(request, signed)
    if second_factor_missing(request, signed):
        raise PageRefused(to_second_factor_set_up())
    return Staffer(signed, signed.is_admin, signed.led_departments)


async def _staff(request: Request, staffer: Annotated[Staffer, Depends(_organizer)]) -> Staffer:
    """A POST must also carry this session's CSRF token and come from this site."""
    if request.method == "POST":
        form = await request.form()  # Starlette keeps it: the route's Form() fields reuse it
        given = form.get(csrf.FIELD_NAME)
        token = given if isinstance(given, str) else None
        if not csrf.session_form_is_genuine(request, staffer.visitor.session_id, token):
            raise PageRefused.forbidden(request, staffer.visitor)
    return staffer


async def _admin(request: Request, staffer: Annotated[Staffer, Depends(_staff)]) -> Staffer:
    if not staffer.is_admin:
        raise PageRefused.not_permitted(request, staffer.visitor)
    return staffer


def _asked_by_administrator(request: Request) -> bool:
    """Whether an administrator is asking, in a transaction of its own: the page's (on SQLite,
    the one write lock) must not be held while a large body arrives. A writer's, as the page's:
    finding the session notes the visit."""
    with write_session(request.app.state.engine) as db:
        live = find_session(db, request.cookies.get(COOKIE_NAME))
        return live is not None and ADMIN in permissions_of(db, live.user_id)


# An administrator or a department lead; routes narrow a lead to their departments with
# `staffer.may_manage_department(id)`.
StaffDep = Annotated[Staffer, Depends(_staff)]
# The `admin` permission.
AdminDep = Annotated[Staffer, Depends(_admin)]
# Whether an administrator is asking, known before the page's transaction begins; refuses no one.
AskedByAdministrator = Annotated[bool, Depends(_asked_by_administrator)]
