"""The account page as its forms show it (accounts.md): what the page routes of this package
share (pages.py shows it, password_pages.py and signup_pages.py show it again with a form's
errors), so that no route module imports another."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.events.service import current_event
from regdesk.oauth.grants import connected_applications
from regdesk.registrations.service import live_registration
from regdesk.users.models import User
from regdesk.web.pages import render, scopes_in_words
from regdesk.web.tickets import ticket_of, ticket_qr_svg
from regdesk.web.visitor import Visitor

MAX_LOGIN = 320  # what a username or e-mail field reads
TextField = Annotated[str, Form()]


def account_view(
    request: Request,
    db: Session,
    visitor: Visitor,
    *,
    revoked: bool = False,
    password_changed: bool = False,
    errors: dict[str, str] | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """The account page; `errors`: what is wrong with the password form just sent."""
    applications = [
        (application, scopes_in_words(application.scopes))
        for application in connected_applications(db, visitor.user.id)
    ]
    held = live_registration(db, visitor.user.id)  # the visitor's own, and only theirs
    return render(
        request,
        "account.html",
        {
            "visitor": visitor,
            "user": visitor.user,
            "address": address_lines(visitor.user),
            "applications": applications,
            "revoked": revoked,
            "password_changed": password_changed,
            "errors": errors or {},
            "password_min": PASSWORD_MIN,
            "event": current_event(db),
            "ticket": ticket_of(held) if held else None,
            "ticket_qr": ticket_qr_svg(held.registration.ticket_code) if held else None,
        },
        status_code=status_code,
        headers=headers,
    )


def address_lines(user: User) -> list[str]:
    """The postal address as it is written on an envelope; empty when there is none."""
    place = " ".join(p for p in (user.address_state, user.address_zipcode) if p)
    city = ", ".join(p for p in (user.address_city, place) if p)
    lines = (user.address_line1, user.address_line2, city, user.address_country)
    return [line for line in lines if line]
