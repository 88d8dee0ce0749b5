"""Who may use the admin pages: the `admin` permission, or leading a department.

A signed-out visitor is sent to the login page and comes back; a signed-in one without the
right is answered 403 with a page saying so. Form actions also check the CSRF token
(`regdesk.web.csrf`) before anything is read from the form, so a forged POST changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor
from regdesk.departments.models import DepartmentLead
from regdesk.users.permissions import ADMIN
from regdesk.users.service import permissions_of
from regdesk.web import csrf
from regdesk.web.visitor import PageDb, PageRefused, Visitor, VisitorDep, signed_in


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


def staffer_of(db: Session, visitor: Visitor) -> Staffer | None:
    """The visitor as an organizer, or None when they hold no admin right at all."""
    is_admin = ADMIN in permissions_of(db, visitor.user.id)
    led = frozenset(
        db.scalars(
            select(DepartmentLead.department_id).where(DepartmentLead.user_id == visitor.user.id)
        )
    )
    if not is_admin and not led:
        return None
    return Staffer(visitor, is_admin, led)


def _organizer(request: Request, db: PageDb, visitor: VisitorDep) -> Staffer:
    signed = signed_in(request, visitor)
    staffer = staffer_of(db, signed)
    if staffer is None:
        raise PageRefused.not_permitted(request, signed)
    return staffer


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


# An administrator or a department lead; routes narrow a lead to their departments with
# `staffer.may_manage_department(id)`.
StaffDep = Annotated[Staffer, Depends(_staff)]
# The `admin` permission.
AdminDep = Annotated[Staffer, Depends(_admin)]
