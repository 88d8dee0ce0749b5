"""Signing in and out, and the account page (operator.md, Web pages; issue 4)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from regdesk import ratelimit
from regdesk.accounts import throttle
from regdesk.accounts.account_page import MAX_LOGIN, TextField, account_form_visitor, account_view
from regdesk.accounts.devices import trusted_device
from regdesk.accounts.factors import has_second_factor
from regdesk.accounts.passwords import password_matches
from regdesk.accounts.sign_in import pending_login_response, signed_in_response
from regdesk.audit.service import Actor, record_event
from regdesk.db import read_session
from regdesk.oauth.grants import revoke_application
from regdesk.users.models import User
from regdesk.users.service import find_by_login
from regdesk.web import csrf
from regdesk.web.pages import render
from regdesk.web.redirects import local_path
from regdesk.web.visitor import (
    PageDb,
    Visitor,
    VisitorDep,
    clear_session_cookie,
    client_address,
    end_visit,
    forbidden,
    login_redirect,
    set_login_cookie,
)

router = APIRouter(include_in_schema=False)

# One message for an unknown account, a wrong password and an account without a password:
# the form must not tell a stranger which usernames exist.
WRONG_CREDENTIALS = "That username or e-mail and password do not match an account."
# What /login?notice=... says: only these words, never what a link puts in the address.
NOTICES = {"password_reset": "Your password was changed. Log in with your new password."}


# --- login ---------------------------------------------------------------------------------


@router.get("/login")
def login_page(
    request: Request,
    visitor: VisitorDep,
    next_: Annotated[str | None, Query(alias="next")] = None,
    notice: Annotated[str | None, Query()] = None,
    login_hint: Annotated[str | None, Query()] = None,
) -> Response:
    """`login_hint`: an OpenID application's guess at who signs in (oidc.md), filled in."""
    return _login_form(
        request,
        visitor,
        next_=local_path(next_),
        username=(login_hint or "").strip()[:MAX_LOGIN],
        notice=NOTICES.get(notice or ""),
    )


@dataclass(frozen=True)
class _Checked:
    """What a sign-in finds before its turn to write comes (deps._write_turn): the account, the
    attempt, and the password's argon2 check, whose tens of milliseconds of CPU must not hold
    up every other writer. Nothing here writes."""

    genuine: bool  # the form came from our login page (CSRF)
    login_name: str
    user: User | None = None
    attempt: throttle.Attempt | None = None
    wait: int | None = None  # the login's own throttle says wait this long
    address_wait: int | None = None  # the address's pace of password checks says so
    matches: bool = False


async def _checked_login(
    request: Request, username: TextField = "", password: TextField = "", csrf_token: TextField = ""
) -> _Checked:
    # An async dependency declared before the page's write session: FastAPI solves them in
    # order, so this runs (in a worker thread) before the session takes its turn.
    return await run_in_threadpool(_check_login, request, username, password, csrf_token)


def _check_login(request: Request, username: str, password: str, csrf_token: str) -> _Checked:
    login_name = username.strip()[:MAX_LOGIN]
    if not csrf.login_form_is_genuine(request, csrf_token):
        return _Checked(genuine=False, login_name=login_name)
    limits_on = request.app.state.settings.rate_limits == "on"
    engine: Engine = request.app.state.engine
    with read_session(engine) as lookup:
        user = find_by_login(lookup, login_name) if login_name else None
        device = trusted_device(request, user)
        attempt = throttle.attempt(login_name, client_address(request), device)
        wait = throttle.retry_after(lookup, attempt) if limits_on else None
    checked = _Checked(True, login_name, user, attempt, wait)
    if device is None and wait is None:
        # The address's pace of password checks (argon2 costs a core): a browser that signed
        # in to this account before is not held up by what others at its address send.
        limited = ratelimit.count(request, "login", ratelimit.sender(request))
        if limited is not None and not limited.allowed:
            return replace(checked, address_wait=limited.retry_after)
    if wait is None:
        return replace(checked, matches=password_matches(user, password))
    return checked


@router.post("/login")
def login(
    request: Request,
    checked: Annotated[_Checked, Depends(_checked_login)],  # first: before the write turn
    db: PageDb,
    visitor: VisitorDep,
    next_: Annotated[str, Form(alias="next")] = "",
) -> Response:
    target = local_path(next_)
    login_name, user, attempt, wait = (
        checked.login_name,
        checked.user,
        checked.attempt,
        checked.wait,
    )
    if not checked.genuine:
        return forbidden(request, visitor)
    assert attempt is not None
    address = client_address(request)
    if checked.address_wait is not None:
        return _too_many(
            request,
            visitor,
            "Too many attempts to log in from your address.",
            checked.address_wait,
            next_=target,
            username=login_name,
        )
    matches = checked.matches
    if wait is None and request.app.state.settings.rate_limits == "on":
        # Again under the lock, which counts attempts on one login one after another.
        throttle.lock(db, attempt)
        wait = throttle.retry_after(db, attempt)
    if wait is not None:
        return _too_many(
            request,
            visitor,
            "Too many failed attempts to log in with these details.",
            wait,
            next_=target,
            username=login_name,
        )

    if not matches:
        throttle.record_failure(db, attempt)
        reason = "unknown_account" if user is None else "wrong_password"
        if user is not None and not user.password_hash:
            reason = "no_password"
        record_event(  # what was typed is not recorded: it is sometimes a password
            db,
            Actor(label="anonymous", ip_address=address),
            "user.login_failed",
            target_type="user" if user else None,
            target_id=user.id if user else None,
            # A failure from a browser that signed in before is most likely the owner's typo.
            details={"reason": reason, **({"trusted_browser": True} if attempt.trusted else {})},
        )
        return _login_form(
            request, visitor, next_=target, username=login_name, error=WRONG_CREDENTIALS
        )

    assert user is not None
    throttle.forgive(db, attempt, (user.username, user.email))
    if has_second_factor(db, user.id):  # no session yet: the second step first
        return pending_login_response(request, user, target)
    return signed_in_response(request, db, user, target)


def _too_many(
    request: Request,
    visitor: Visitor | None,
    reason: str,
    wait: int,
    *,
    next_: str | None,
    username: str,
) -> HTMLResponse:
    """429: the form again, to try later, saying how long to wait."""
    minutes = -(-wait // 60)
    return _login_form(
        request,
        visitor,
        next_=next_,
        username=username,
        error=f"{reason} Please wait {minutes} minute{'s' if minutes != 1 else ''} and try "
        "again, or log in from a browser you have logged in with before.",
        status_code=429,
        headers={"Retry-After": str(wait)},
    )


def _login_form(
    request: Request,
    visitor: Visitor | None,
    *,
    next_: str | None,
    username: str = "",
    notice: str | None = None,
    error: str | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    nonce, fresh = csrf.login_nonce(request)
    response = render(
        request,
        "login.html",
        {
            "visitor": visitor,
            "login_token": csrf.login_token(request, nonce),
            "next": next_,
            "username": username,
            "notice": notice,
            "error": error,
            "signup_open": request.app.state.settings.signup == "open",
        },
        status_code=status_code,
        headers=headers,
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response


# --- logout --------------------------------------------------------------------------------


@router.get("/logout")
def logout_page(request: Request, visitor: VisitorDep) -> HTMLResponse:
    """Signed in: a button that logs out (a POST, with its CSRF token). Else: signed out."""
    return render(request, "logout.html", {"visitor": visitor})


@router.post("/logout")
def logout(
    request: Request, db: PageDb, visitor: VisitorDep, csrf_token: TextField = ""
) -> Response:
    if visitor is None:
        return RedirectResponse("/logout", status_code=303)
    if not csrf.session_form_is_genuine(request, visitor.session_id, csrf_token):
        return forbidden(request, visitor)
    end_visit(db, visitor)
    response = RedirectResponse("/logout", status_code=303)
    clear_session_cookie(response, request)
    return response


# --- the account page ----------------------------------------------------------------------


@router.get("/account")
def account_page(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    revoked: Annotated[str | None, Query()] = None,
    password_changed: Annotated[str | None, Query()] = None,
    email_sent: Annotated[str | None, Query()] = None,
    factor: Annotated[str | None, Query()] = None,
) -> Response:
    if visitor is None:
        return login_redirect("/account")
    return account_view(
        request,
        db,
        visitor,
        revoked=revoked is not None,
        password_changed=password_changed is not None,
        email_sent=email_sent is not None,
        factor_notice=factor,
    )


@router.post("/account/revoke")
def revoke(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    csrf_token: TextField = "",
    application_id: TextField = "",
) -> Response:
    """Take back everything granted to one application: its grants and tokens die at once."""
    visitor = account_form_visitor(request, visitor, csrf_token)
    if not (application_id.isascii() and application_id.isdigit() and len(application_id) < 10):
        return RedirectResponse("/account", status_code=303)
    revoke_application(db, visitor.actor, visitor.user.id, int(application_id))
    return RedirectResponse("/account?revoked", status_code=303)
