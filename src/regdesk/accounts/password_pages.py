"""A person's own new password (accounts.md, Password reset): asked for by mail on
/password/forgot and set on /password/reset/<token> by following the link, or changed on
/account by giving the current one. The service is passwords.py; the rule, password_rule.py.

The link's token is the key to an account for an hour: it is in no page (the reset form posts
back to its own address), no referrer (every page says `Referrer-Policy: no-referrer`,
web/headers.py), no audit event and no line of the access log (web/access_log.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from regdesk.accounts.account_page import (
    MAX_LOGIN,
    TextField,
    account_form_visitor,
    account_view,
    anonymous_form,
    password_refused,
)
from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.accounts.passwords import (
    change_password,
    request_reset,
    reset_by_link,
    reset_user,
)
from regdesk.deps import IssuerDep
from regdesk.errors import Invalid
from regdesk.web import csrf
from regdesk.web.pages import render
from regdesk.web.visitor import (
    PageDb,
    Visitor,
    VisitorDep,
    client_address,
    forbidden,
)

router = APIRouter(include_in_schema=False)

MAX_TOKEN = 100  # ours are 43 characters (links.py)


# --- asking for a link ---------------------------------------------------------------------


@router.get("/password/forgot")
def forgot_page(
    request: Request, visitor: VisitorDep, sent: Annotated[str | None, Query()] = None
) -> Response:
    context = {"sent": sent is not None, "error": None}
    return anonymous_form(request, visitor, "password_forgot.html", context)


@router.post("/password/forgot")
def forgot(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    login: TextField = "",
    csrf_token: TextField = "",
) -> Response:
    """The same answer whoever is named, known or not, throttled or not: "if an account goes
    by it, we have sent a link"."""
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    typed = login.strip()[:MAX_LOGIN]
    if not typed:
        error = "Type your username or the e-mail address of your account."
        context = {"sent": False, "error": error}
        return anonymous_form(request, visitor, "password_forgot.html", context, status_code=400)
    limited = request.app.state.settings.rate_limits == "on"
    request_reset(db, typed, address=client_address(request), site=site, limited=limited)
    return RedirectResponse("/password/forgot?sent", status_code=303)


# --- following it ----------------------------------------------------------------------------


@router.get("/password/reset/{token}")
def reset_page(request: Request, token: str, db: PageDb, visitor: VisitorDep) -> Response:
    user = reset_user(db, token) if len(token) <= MAX_TOKEN else None
    if user is None:
        return _dead_link(request, visitor)
    return anonymous_form(request, visitor, "password_reset.html", _reset_context(user.username))


@router.post("/password/reset/{token}")
def reset(
    request: Request,
    token: str,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    password: TextField = "",
    password_again: TextField = "",
) -> Response:
    """A refused password shows the form again and leaves the link unused; a good one uses it
    up and sends the person to log in with it."""
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    user = reset_user(db, token) if len(token) <= MAX_TOKEN else None
    if user is None:
        return _dead_link(request, visitor)
    try:
        done = reset_by_link(
            db, token, password, password_again, address=client_address(request), site=site
        )
    except Invalid as refused:
        context = _reset_context(user.username, refused.errors)
        return anonymous_form(request, visitor, "password_reset.html", context, status_code=400)
    if done is None:
        return _dead_link(request, visitor)
    return RedirectResponse("/login?notice=password_reset", status_code=303)


def _reset_context(username: str, errors: dict[str, str] | None = None) -> dict[str, Any]:
    return {"username": username, "errors": errors or {}, "password_min": PASSWORD_MIN}


def _dead_link(request: Request, visitor: Visitor | None) -> HTMLResponse:
    """410: unknown, used, expired or superseded alike (which one is nobody's business)."""
    return render(request, "password_link_dead.html", {"visitor": visitor}, status_code=410)


# --- changing it on /account ---------------------------------------------------------------


@router.post("/account/password")
def new_password(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    current_password: TextField = "",
    password: TextField = "",
    password_again: TextField = "",
) -> Response:
    """A new password, given the current one. A wrong current password is a failed login for
    the throttle (throttle.py): a stolen session gets no more guesses than the login form."""
    visitor = account_form_visitor(request, visitor, csrf_token)
    user = visitor.user

    def show(errors: dict[str, str], status: int, headers: Mapping[str, str] | None) -> Response:
        return account_view(
            request, db, visitor, errors=errors, status_code=status, headers=headers
        )

    refused = password_refused(
        request,
        db,
        visitor,
        current_password,
        field="current_password",
        failed_action="user.password_change_failed",
        show=show,
    )
    if refused is not None:
        return refused
    try:
        change_password(
            db,
            visitor.actor,
            user,
            password,
            password_again,
            keep_session=visitor.session_id,
            site=site,
        )
    except Invalid as invalid:
        return account_view(request, db, visitor, errors=invalid.errors, status_code=400)
    return RedirectResponse("/account?password_changed", status_code=303)
