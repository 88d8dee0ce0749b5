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

from regdesk.accounts import throttle
from regdesk.accounts.account_page import MAX_LOGIN, TextField, account_view
from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.accounts.passwords import (
    change_password,
    password_matches,
    request_reset,
    reset_by_link,
    reset_user,
)
from regdesk.audit.service import record_event
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
    login_redirect,
    set_login_cookie,
)

router = APIRouter(include_in_schema=False)

MAX_TOKEN = 100  # ours are 43 characters (links.py)


# --- asking for a link ---------------------------------------------------------------------


@router.get("/password/forgot")
def forgot_page(
    request: Request, visitor: VisitorDep, sent: Annotated[str | None, Query()] = None
) -> Response:
    context = {"sent": sent is not None, "error": None}
    return _anonymous_form(request, visitor, "password_forgot.html", context)


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
        return _anonymous_form(request, visitor, "password_forgot.html", context, status_code=400)
    limited = request.app.state.settings.rate_limits == "on"
    request_reset(db, typed, address=client_address(request), site=site, limited=limited)
    return RedirectResponse("/password/forgot?sent", status_code=303)


# --- following it ----------------------------------------------------------------------------


@router.get("/password/reset/{token}")
def reset_page(request: Request, token: str, db: PageDb, visitor: VisitorDep) -> Response:
    user = reset_user(db, token) if len(token) <= MAX_TOKEN else None
    if user is None:
        return _dead_link(request, visitor)
    return _anonymous_form(request, visitor, "password_reset.html", _reset_context(user.username))


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
        return _anonymous_form(request, visitor, "password_reset.html", context, status_code=400)
    if done is None:
        return _dead_link(request, visitor)
    return RedirectResponse("/login?notice=password_reset", status_code=303)


def _reset_context(username: str, errors: dict[str, str] | None = None) -> dict[str, Any]:
    return {"username": username, "errors": errors or {}, "password_min": PASSWORD_MIN}


def _dead_link(request: Request, visitor: Visitor | None) -> HTMLResponse:
    """410: unknown, used, expired or superseded alike (which one is nobody's business)."""
    return render(request, "password_link_dead.html", {"visitor": visitor}, status_code=410)


def _anonymous_form(
    request: Request,
    visitor: Visitor | None,
    template: str,
    context: Mapping[str, Any],
    *,
    status_code: int = 200,
) -> HTMLResponse:
    """A page whose form is sent before anyone is signed in: CSRF as the login form's."""
    nonce, fresh = csrf.login_nonce(request)
    response = render(
        request,
        template,
        {"visitor": visitor, "login_token": csrf.login_token(request, nonce), **context},
        status_code=status_code,
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response


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
    if visitor is None:
        return login_redirect("/account")
    if not csrf.session_form_is_genuine(request, visitor.session_id, csrf_token):
        return forbidden(request, visitor)
    user = visitor.user
    limits_on = request.app.state.settings.rate_limits == "on"
    attempt = throttle.attempt(user.username, visitor.ip_address, None)
    wait = throttle.retry_after(db, attempt) if limits_on else None
    if wait is None:
        matches = password_matches(user, current_password)
        if limits_on:
            throttle.lock(db, attempt)  # as at login: concurrent guesses counted one by one
            wait = throttle.retry_after(db, attempt)
    if wait is not None:
        minutes = -(-wait // 60)
        problem = (
            f"Too many wrong passwords for this account. Please wait {minutes} "
            f"minute{'s' if minutes != 1 else ''} and try again."
        )
        return account_view(
            request,
            db,
            visitor,
            errors={"current_password": problem},
            status_code=429,
            headers={"Retry-After": str(wait)},
        )
    if not matches:
        throttle.record_failure(db, attempt)
        record_event(
            db,
            visitor.actor,
            "user.password_change_failed",
            target_type="user",
            target_id=user.id,
            details={"reason": "wrong_password"},
        )
        problem = "That is not your current password."
        return account_view(
            request, db, visitor, errors={"current_password": problem}, status_code=400
        )
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
    except Invalid as refused:
        return account_view(request, db, visitor, errors=refused.errors, status_code=400)
    throttle.forgive(db, attempt, (user.username, user.email))
    return RedirectResponse("/account?password_changed", status_code=303)
