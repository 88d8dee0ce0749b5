"""The consent screen of the OAuth authorization request (api.md 4.1, 5.1) and the logout an
application sends its users through (`/oauth/logout`, operator.md).

The checks themselves live in `regdesk.oauth.authorization`; this module only decides what
the browser sees. Their order is the RFC 6749 4.1.2.1 one: a request naming an unknown client
or an unregistered redirect address gets an error page and is never redirected, whoever is
signed in; every other problem goes back to the application; only then does it matter
whether someone is signed in.

OpenID Connect's `prompt` and `max_age` (oidc.md) decide whether the visitor signs in (again)
first: `prompt=login`, or a sign-in older than `max_age`, sends them to the login page, which
brings them back here without `login` or `max_age` (they have just signed in). `prompt=none`
shows no page: the application gets its code at once when the user granted it everything
asked before, and otherwise `login_required`, `consent_required` or `interaction_required`.
`prompt=consent` asks again, as every request without `prompt` does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.db import utcnow
from regdesk.deps import IssuerDep
from regdesk.oauth.authorization import (
    AuthorizationPageError,
    AuthorizationRedirectError,
    AuthorizationRequest,
    approve,
    check_authorization_request,
    deny,
    error_redirect,
    holds_grant,
    scopes_user_lacks,
)
from regdesk.oauth.clients import load_client
from regdesk.web import csrf
from regdesk.web.headers import policy_with_form_target
from regdesk.web.pages import render, scopes_in_words
from regdesk.web.redirects import same_origin_as_any
from regdesk.web.sessions import COOKIE_NAME
from regdesk.web.staff_factor import second_factor_missing, to_second_factor_set_up
from regdesk.web.visitor import (
    PageDb,
    Visitor,
    VisitorDep,
    clear_session_cookie,
    end_visit,
    forbidden,
    login_redirect,
)

router = APIRouter(include_in_schema=False)

AUTHORIZE_PATH = "/oauth/authorize"
MAX_FORM_REQUEST = 32 * 1024


@router.get(AUTHORIZE_PATH)
def authorize_page(
    request: Request, db: PageDb, visitor: VisitorDep, issuer: IssuerDep
) -> Response:
    params = request.query_params.multi_items()
    return _answer(request, db, visitor, issuer, params, decision=None)


@router.post(AUTHORIZE_PATH)
def authorize(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    issuer: IssuerDep,
    csrf_token: Annotated[str, Form()] = "",
    authorization_request: Annotated[str, Form()] = "",
    decision: Annotated[str, Form()] = "",
) -> Response:
    """The consent form's answer. The request travels in one hidden field, form-encoded as it
    came, so every parameter (a 1024-character state with line breaks included) comes back
    exactly: a browser would turn a bare line feed into CR LF in a field of its own."""
    params = parse_qsl(authorization_request[:MAX_FORM_REQUEST], keep_blank_values=True)
    if visitor is None:  # the session ended while the screen was open: sign in, ask again
        return login_redirect(f"{AUTHORIZE_PATH}?{urlencode(params)}")
    if not csrf.session_form_is_genuine(request, visitor.session_id, csrf_token):
        return forbidden(request, visitor)
    return _answer(request, db, visitor, issuer, params, decision=decision)


def _answer(
    request: Request,
    db: Session,
    visitor: Visitor | None,
    issuer: str,
    params: Sequence[tuple[str, str]],
    *,
    decision: str | None,
) -> Response:
    redirect_status = 302 if decision is None else 303
    try:
        checked = check_authorization_request(db, params, issuer)
    except AuthorizationPageError as error:
        return _invalid_request(request, visitor, message=str(error))
    except AuthorizationRedirectError as error:
        return RedirectResponse(error.location, status_code=redirect_status)
    silent = "none" in checked.prompt

    def back(error: str, description: str) -> RedirectResponse:
        """prompt=none: what would have been a page goes back to the application instead."""
        return RedirectResponse(
            error_redirect(checked, error, description, issuer), status_code=redirect_status
        )

    if visitor is None or _signs_in_again(visitor, checked.prompt, checked.max_age):
        if silent:
            return back("login_required", "The user must sign in.")
        # Back here once signed in, without what asked for it: they will just have signed in.
        again = [(k, v) for k, v in params if k not in ("prompt", "max_age")]
        if checked.prompt - {"login"}:
            again.append(("prompt", " ".join(sorted(checked.prompt - {"login"}))))
        return login_redirect(f"{AUTHORIZE_PATH}?{urlencode(again)}", checked.login_hint)
    lacking = scopes_user_lacks(db, visitor.user.id, checked.scopes)
    if lacking and silent:
        return back("consent_required", "The user cannot grant every scope asked.")
    if lacking:  # api.md 5.1.3: an invalid-request error, and no redirect
        return _invalid_request(
            request,
            visitor,
            message=f"{checked.application_name} asks for permissions that your account "
            "does not have, so you cannot grant them.",
            lacking=lacking,
        )
    if checked.sensitive_scopes and second_factor_missing(request, visitor):
        if silent:
            return back("interaction_required", "The user must set up a second factor.")
        return to_second_factor_set_up()
    if silent and decision is None:
        if not holds_grant(db, visitor.user.id, checked):
            return back("consent_required", "The user has not granted these scopes.")
        decision = "authorize"
    if decision == "authorize":
        signed_in = visitor.session
        location = approve(
            db,
            visitor.actor,
            checked,
            visitor.user.id,
            issuer,
            auth_time=signed_in.signed_in_at if signed_in else None,
            sid=signed_in.sid if signed_in else None,
        )
        return RedirectResponse(location, status_code=redirect_status if silent else 303)
    if decision == "deny":
        return RedirectResponse(deny(db, visitor.actor, checked, issuer), status_code=303)
    return _consent_screen(request, visitor, checked, params)


def _signs_in_again(visitor: Visitor, prompt: frozenset[str], max_age: int | None) -> bool:
    """OpenID Connect Core 3.1.2.1: `prompt=login`, or a sign-in older than `max_age`."""
    if "login" in prompt:
        return True
    signed_in = visitor.session
    if max_age is None or signed_in is None:
        return False
    return utcnow() - signed_in.signed_in_at > dt.timedelta(seconds=max_age)


def _consent_screen(
    request: Request,
    visitor: Visitor,
    checked: AuthorizationRequest,
    params: Sequence[tuple[str, str]],
) -> HTMLResponse:
    return render(
        request,
        "consent.html",
        {
            "visitor": visitor,
            "application": checked,
            "scopes": scopes_in_words(checked.scopes),
            "sensitive": bool(checked.sensitive_scopes),
            "authorization_request": urlencode(params),
        },
        headers={"Content-Security-Policy": policy_with_form_target(checked.redirect_uri)},
    )


def _invalid_request(
    request: Request,
    visitor: Visitor | None,
    *,
    message: str,
    lacking: Sequence[str] = (),
) -> HTMLResponse:
    return render(
        request,
        "invalid_request.html",
        {"visitor": visitor, "message": message, "lacking": scopes_in_words(list(lacking))},
        status_code=400,
    )


@router.get("/oauth/logout")
def oauth_logout(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    client_id: Annotated[str | None, Query()] = None,
    next_: Annotated[str | None, Query(alias="next")] = None,
) -> Response:
    """End the session, then go back to the application only if `next` is at the origin of one
    of its registered redirect addresses (else anyone could bounce visitors anywhere).

    A GET that changes state, without a CSRF token: another site can log a visitor out. That
    is what this endpoint is for (an application's "log out everywhere" link, operator.md),
    and logging out is low-harm; it can never sign anyone in or grant anything.
    """
    if visitor is not None:
        end_visit(db, visitor)
    client = load_client(db, client_id)
    target = same_origin_as_any(next_, client.application.redirect_uris) if client else None
    response: Response
    if target is not None:
        response = RedirectResponse(target, status_code=303)
    else:
        response = render(request, "logout.html", {"visitor": None})
    if request.cookies.get(COOKIE_NAME):
        clear_session_cookie(response, request)
    return response
