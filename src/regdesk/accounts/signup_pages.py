"""/signup, the e-mail verification link's pages and the address change on /account
(accounts.md, Sign-up and verification).

Forms before sign-in carry the login form's CSRF token (web/csrf.py: a nonce cookie and its
signature). The verification link's GET only shows a button: mail scanners fetch links, and a
fetch must not use up a single-use link; the button's POST does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.accounts import throttle
from regdesk.accounts.account_page import (
    MAX_LOGIN,
    TextField,
    account_form_visitor,
    account_view,
    anonymous_form,
    password_refused,
)
from regdesk.accounts.links import LinkPurpose, issue_link, peek_link
from regdesk.accounts.signup import (
    SignUp,
    request_email_change,
    sign_up,
    verify_email,
    waiting_address,
)
from regdesk.audit.service import Actor
from regdesk.config import Settings
from regdesk.errors import Invalid
from regdesk.mail.service import queue_mail
from regdesk.users.models import User
from regdesk.web import csrf
from regdesk.web.mail_templates import render_mail
from regdesk.web.pages import render
from regdesk.web.sessions import COOKIE_NAME, end_session, start_session
from regdesk.web.visitor import (
    PageDb,
    Visitor,
    VisitorDep,
    client_address,
    forbidden,
    set_session_cookie,
)

router = APIRouter(include_in_schema=False)

FIELDS = ("username", "first_name", "last_name", "preferred_name", "email", "born")


@router.get("/signup")
def signup_page(request: Request, visitor: VisitorDep) -> Response:
    if not _open(request):
        return _closed(request, visitor)
    return _form(request, visitor, {})


@router.post("/signup")
def signup(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    username: TextField = "",
    first_name: TextField = "",
    last_name: TextField = "",
    preferred_name: TextField = "",
    email: TextField = "",
    born: TextField = "",
    password: TextField = "",
    terms: TextField = "",
    csrf_token: TextField = "",
) -> Response:
    if not _open(request):
        return _closed(request, visitor)
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    typed = {
        "username": username.strip()[:320],
        "first_name": first_name[:200],
        "last_name": last_name[:200],
        "preferred_name": preferred_name[:200],
        "email": email.strip()[:320],
        "born": born[:32],
    }
    address = client_address(request)
    settings: Settings = request.app.state.settings
    if settings.rate_limits == "on" and not throttle.signup_allowed(db, address):
        return _form(
            request,
            visitor,
            typed,
            error="Too many sign-ups were tried from your address lately. Please try again "
            "in a quarter of an hour.",
            status_code=429,
        )
    form = SignUp(**typed, password=password[:2048], terms_agreed=terms == "yes")
    actor = Actor(label="anonymous", ip_address=address)
    try:
        user, token = sign_up(
            db,
            actor,
            form,
            terms_required=settings.terms_url is not None,
            today=dt.datetime.now(dt.UTC).date(),
        )
    except Invalid as invalid:
        return _form(request, visitor, typed, errors=invalid.errors, status_code=400)
    mail_verification(db, settings, user, user.email, token)
    # Signed in at once (accounts.md: the address is verified later), in a new session.
    end_session(db, request.cookies.get(COOKIE_NAME))
    live = start_session(
        db, user.id, ip_address=address, user_agent=request.headers.get("user-agent")
    )
    response = RedirectResponse("/account", status_code=303)
    set_session_cookie(response, request, live.session_id)
    return response


def mail_verification(
    db: Session, settings: Settings, user: User, address: str, token: str
) -> None:
    """The verification link, to `address` (a new account's, or the address it changes to)."""
    text, html = render_mail(
        "verify_email",
        {
            "name": user.preferred_name or user.first_name,
            "username": user.username,
            "address": address,
            "new_account": address == user.email and not user.verified,
            "link": f"{settings.issuer}/verify/{token}",
            "site": settings.issuer,
        },
    )
    queue_mail(db, to=address, subject="Confirm your e-mail address", text=text, html=html)


@router.get("/verify/{token}")
def verify_page(request: Request, db: PageDb, visitor: VisitorDep, token: str) -> Response:
    link = peek_link(db, token, LinkPurpose.VERIFY_EMAIL)
    if link is None:
        return _dead_link(request, visitor)
    return anonymous_form(
        request,
        visitor,
        "verify.html",
        {"address": link.email},
        headers={"Referrer-Policy": "no-referrer"},
    )


@router.post("/verify/{token}")
def verify(
    request: Request, db: PageDb, visitor: VisitorDep, token: str, csrf_token: TextField = ""
) -> Response:
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    actor = Actor(label="anonymous", ip_address=client_address(request))
    verified = verify_email(db, actor, token)
    if verified is None:
        return _dead_link(request, visitor)
    user = verified.user
    if verified.previous is not None:  # the old address hears of it (accounts.md)
        settings: Settings = request.app.state.settings
        text, html = render_mail(
            "email_changed",
            {
                "name": user.preferred_name or user.first_name,
                "username": user.username,
                "address": user.email,
                "site": settings.issuer,
                "forgot": f"{settings.issuer}/password/forgot",
            },
        )
        queue_mail(
            db,
            to=verified.previous,
            subject="Your e-mail address was changed",
            text=text,
            html=html,
        )
    return render(
        request,
        "verify_done.html",
        {"visitor": visitor, "address": user.email},
        headers={"Referrer-Policy": "no-referrer"},
    )


# --- changing the address, on /account ---------------------------------------------------------


@router.post("/account/email")
def change_email(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    csrf_token: TextField = "",
    email: TextField = "",
    current_password: TextField = "",
) -> Response:
    """A new address, given the current password: a link goes to it, and the address on the
    account changes when it is followed."""
    visitor = account_form_visitor(request, visitor, csrf_token)
    user = visitor.user

    def show(errors: dict[str, str], status: int, headers: Mapping[str, str] | None) -> Response:
        return account_view(
            request, db, visitor, email_errors=errors, status_code=status, headers=headers
        )

    refused = password_refused(
        request,
        db,
        visitor,
        current_password,
        field="email_password",
        failed_action="user.email_change_failed",
        show=show,
    )
    if refused is not None:
        return refused
    try:
        token = request_email_change(db, visitor.actor, user, email.strip()[:MAX_LOGIN])
    except Invalid as invalid:
        return account_view(request, db, visitor, email_errors=invalid.errors, status_code=400)
    address = waiting_address(db, user)
    assert address is not None
    mail_verification(db, request.app.state.settings, user, address, token)
    return RedirectResponse("/account?email_sent", status_code=303)


@router.post("/account/email/resend")
def resend_link(
    request: Request, db: PageDb, visitor: VisitorDep, csrf_token: TextField = ""
) -> Response:
    """The verification link again, to the address waiting for it (throttled: an address
    someone else typed must not be flooded)."""
    visitor = account_form_visitor(request, visitor, csrf_token)
    user = visitor.user
    address = waiting_address(db, user) or (None if user.verified else user.email)
    if address is None:
        return RedirectResponse("/account", status_code=303)
    settings: Settings = request.app.state.settings
    limited = settings.rate_limits == "on"
    if limited and not throttle.link_request_allowed(
        db, f"verify:{user.id}", client_address(request)
    ):
        problem = "A link was sent several times lately. Please wait a quarter of an hour."
        return account_view(request, db, visitor, email_errors={"email": problem}, status_code=429)
    token = issue_link(db, user.id, LinkPurpose.VERIFY_EMAIL, email=address)
    mail_verification(db, settings, user, address, token)
    return RedirectResponse("/account?email_sent", status_code=303)


def _open(request: Request) -> bool:
    return bool(request.app.state.settings.signup == "open")


def _closed(request: Request, visitor: Visitor | None) -> HTMLResponse:
    return render(request, "signup_closed.html", {"visitor": visitor}, status_code=404)


def _dead_link(request: Request, visitor: Visitor | None) -> HTMLResponse:
    return render(
        request,
        "verify_dead.html",
        {"visitor": visitor},
        status_code=410,
        headers={"Referrer-Policy": "no-referrer"},
    )


def _form(
    request: Request,
    visitor: Visitor | None,
    typed: dict[str, str],
    *,
    errors: dict[str, str] | None = None,
    error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    return anonymous_form(
        request,
        visitor,
        "signup.html",
        {
            "typed": {name: typed.get(name, "") for name in FIELDS},
            "errors": errors or {},
            "error": error,
            "terms_url": request.app.state.settings.terms_url,
        },
        status_code=status_code,
    )
