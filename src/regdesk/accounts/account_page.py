"""The account page as its forms show it (accounts.md): what the page routes of this package
share (pages.py shows it, password_pages.py and signup_pages.py show it again with a form's
errors), so that no route module imports another."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from regdesk.accounts import throttle
from regdesk.accounts.factor_models import SecurityKey
from regdesk.accounts.factors import (
    has_second_factor,
    recovery_codes_left,
    security_keys_of,
    totp_factor,
)
from regdesk.accounts.password_rule import PASSWORD_MIN
from regdesk.accounts.passwords import password_matches
from regdesk.accounts.signup import waiting_address
from regdesk.audit.service import record_event
from regdesk.events.service import current_event
from regdesk.oauth.grants import connected_applications
from regdesk.registrations.service import live_registration
from regdesk.users.models import User
from regdesk.web import csrf
from regdesk.web.pages import render, scopes_in_words
from regdesk.web.tickets import ticket_of, ticket_qr_svg
from regdesk.web.visitor import PageRefused, Visitor, login_redirect, set_login_cookie

MAX_LOGIN = 320  # what a username or e-mail field reads
TextField = Annotated[str, Form()]


def account_form_visitor(request: Request, visitor: Visitor | None, csrf_token: str) -> Visitor:
    """The signed-in visitor sending a form of /account, its CSRF token checked; else the
    refusal (PageRefused): to log in and come back to /account, or forbidden."""
    if visitor is None:
        raise PageRefused(login_redirect("/account"))
    if not csrf.session_form_is_genuine(request, visitor.session_id, csrf_token):
        raise PageRefused.forbidden(request, visitor)
    return visitor


def account_view(
    request: Request,
    db: Session,
    visitor: Visitor,
    *,
    revoked: bool = False,
    password_changed: bool = False,
    errors: dict[str, str] | None = None,
    email_errors: dict[str, str] | None = None,
    email_sent: bool = False,
    factor_notice: str | None = None,
    factor_errors: dict[str, str] | None = None,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """The account page; `errors`, `email_errors`: what is wrong with the password form or the
    e-mail form just sent; `email_sent`: a verification link just went out; `factor_notice`,
    `factor_errors`: what the second-factor section says of what was just done or refused."""
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
            "email_errors": email_errors or {},
            "email_sent": email_sent,
            "waiting_address": waiting_address(db, visitor.user),
            "password_min": PASSWORD_MIN,
            "factors": second_factors(db, visitor.user),
            "factor_notice": FACTOR_NOTICES.get(factor_notice or ""),
            "factor_errors": factor_errors or {},
            "event": current_event(db),
            "ticket": ticket_of(held) if held else None,
            "ticket_qr": ticket_qr_svg(db, held.registration.ticket_code) if held else None,
        },
        status_code=status_code,
        headers=headers,
    )


@dataclass(frozen=True)
class PasswordCheck:
    """The current password typed on an /account form, checked as the login form checks one."""

    attempt: throttle.Attempt
    matches: bool
    wait: int | None  # seconds before another try: too many wrong ones lately

    def too_many(self) -> str:
        minutes = -(-(self.wait or 0) // 60)
        return (
            f"Too many wrong passwords for this account. Please wait {minutes} "
            f"minute{'s' if minutes != 1 else ''} and try again."
        )


def check_current_password(
    request: Request, db: Session, visitor: Visitor, password: str
) -> PasswordCheck:
    """A wrong one counts as a failed login for the throttle (throttle.py): a stolen session
    gets no more guesses than the login form. The caller records the failure or forgives."""
    user = visitor.user
    limits_on = request.app.state.settings.rate_limits == "on"
    attempt = throttle.attempt(user.username, visitor.ip_address, None)
    wait = throttle.retry_after(db, attempt) if limits_on else None
    matches = False
    if wait is None:
        matches = password_matches(user, password)
        if limits_on:
            throttle.lock(db, attempt)  # as at login: concurrent guesses counted one by one
            wait = throttle.retry_after(db, attempt)
    return PasswordCheck(attempt, matches, wait)


# What /account?factor=... says in its second-factor section: only these words.
FACTOR_NOTICES = {
    "added": "Your second factor was added. Signing in now asks for it.",
    "removed": "The second factor was removed.",
    "renamed": "The security key was renamed.",
    "required": "The organizers require a second factor for accounts that can see other "
    "people's data: add one below to use the admin area and to grant sensitive access.",
}


@dataclass(frozen=True)
class SecondFactors:
    """The second-factor section of the account page."""

    any: bool
    totp: bool  # a confirmed authenticator app
    security_keys: list[SecurityKey]
    recovery_codes_left: int


def second_factors(db: Session, user: User) -> SecondFactors:
    app = totp_factor(db, user.id)
    return SecondFactors(
        any=has_second_factor(db, user.id),
        totp=app is not None and app.confirmed_at is not None,
        security_keys=security_keys_of(db, user.id),
        recovery_codes_left=recovery_codes_left(db, user.id),
    )


# Pages that show a secret (the app's, the recovery codes) are kept by no cache.
NO_STORE = {"Cache-Control": "no-store"}


def recovery_codes_page(
    request: Request, visitor: Visitor, codes: list[str], *, first: bool
) -> HTMLResponse:
    """Ten recovery codes, shown on this answer only; `first`: they came with a first factor."""
    return render(
        request,
        "recovery_codes.html",
        {"visitor": visitor, "codes": codes, "first": first},
        headers=NO_STORE,
    )


# The account page again with a form's errors: (errors, status code, headers) -> the page.
ShowErrors = Callable[[dict[str, str], int, Mapping[str, str] | None], Response]
WRONG_PASSWORD = "That is not your current password."


def password_refused(
    request: Request,
    db: Session,
    visitor: Visitor,
    password: str,
    *,
    field: str,
    failed_action: str,
    show: ShowErrors,
) -> Response | None:
    """The page `show` makes, its `field` saying why, unless `password` is the visitor's own
    (then None, their earlier wrong ones forgiven). A wrong one is recorded for the throttle
    and audited as `failed_action`."""
    checked = check_current_password(request, db, visitor, password)
    if checked.wait is not None:
        return show({field: checked.too_many()}, 429, {"Retry-After": str(checked.wait)})
    user = visitor.user
    if not checked.matches:
        throttle.record_failure(db, checked.attempt)
        record_event(
            db,
            visitor.actor,
            failed_action,
            target_type="user",
            target_id=user.id,
            details={"reason": "wrong_password"},
        )
        return show({field: WRONG_PASSWORD}, 400, None)
    throttle.forgive(db, checked.attempt, (user.username, user.email))
    return None


def anonymous_form(
    request: Request,
    visitor: Visitor | None,
    template: str,
    context: Mapping[str, Any],
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """A page whose form is sent before anyone is signed in (the login form, sign-up, a
    mailed link's): its CSRF token is the login form's, with its cookie when new."""
    nonce, fresh = csrf.login_nonce(request)
    response = render(
        request,
        template,
        {"visitor": visitor, "login_token": csrf.login_token(request, nonce), **context},
        status_code=status_code,
        headers=headers,
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response


def address_lines(user: User) -> list[str]:
    """The postal address as it is written on an envelope; empty when there is none."""
    place = " ".join(p for p in (user.address_state, user.address_zipcode) if p)
    city = ", ".join(p for p in (user.address_city, place) if p)
    lines = (user.address_line1, user.address_line2, city, user.address_country)
    return [line for line in lines if line]
