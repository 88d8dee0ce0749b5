"""Who may use the desk: staff holding `registration:desk`, and administrators.

As in the admin area (admin/access.py): a signed-out visitor is sent to log in and comes back;
a signed-in one without the permission is answered 403 with a page saying so; staff without a
second factor, when one is required, are sent to add one; a POST must carry the session's CSRF
token (regdesk.web.csrf) or nothing is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from regdesk.audit.service import Actor
from regdesk.web import csrf
from regdesk.web.staff_factor import second_factor_missing, to_second_factor_set_up
from regdesk.web.visitor import PageRefused, Visitor, VisitorDep, signed_in


@dataclass(frozen=True)
class DeskStaffer:
    """A signed-in member of the desk staff (or an administrator, who may also override)."""

    visitor: Visitor

    @property
    def actor(self) -> Actor:
        return self.visitor.actor

    @property
    def csrf_token(self) -> str:
        return self.visitor.csrf_token

    @property
    def is_admin(self) -> bool:
        return self.visitor.is_admin


def _signed_desk_staff(request: Request, visitor: VisitorDep) -> DeskStaffer:
    signed = signed_in(request, visitor)
    if not signed.works_desk:
        raise PageRefused.not_permitted(request, signed)
    if second_factor_missing(request, signed):
        raise PageRefused(to_second_factor_set_up())
    return DeskStaffer(signed)


async def _desk_staff(
    request: Request, staffer: Annotated[DeskStaffer, Depends(_signed_desk_staff)]
) -> DeskStaffer:
    """A POST must also carry this session's CSRF token."""
    if request.method == "POST":
        form = await request.form()  # Starlette keeps it: the route's Form() fields reuse it
        given = form.get(csrf.FIELD_NAME)
        token = given if isinstance(given, str) else None
        if not csrf.session_form_is_genuine(request, staffer.visitor.session_id, token):
            raise PageRefused.forbidden(request, staffer.visitor)
    return staffer


DeskDep = Annotated[DeskStaffer, Depends(_desk_staff)]
