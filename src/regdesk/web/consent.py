"""The consent screen of the OAuth authorization request (api.md 4.1, 5.1) and the logout an
application sends its users through (`/oauth/logout`, operator.md).

The checks themselves live in `regdesk.oauth.authorization`; this module only decides what
the browser sees. Their order is the RFC 6749 4.1.2.1 one: a request naming an unknown client
or an unregistered redirect address gets an error page and is never redirected, whoever is
signed in; every other problem goes back to the application; only then does it matter
whether someone is signed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from regdesk.deps import IssuerDep
from regdesk.oauth.authorization import (
    AuthorizationPageError,
    AuthorizationRedirectError,
    AuthorizationRequest,
    approve,
    check_authorization_request,
    deny,
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
    if visitor is None:
        return login_redirect(f"{AUTHORIZE_PATH}?{urlencode(params)}")
    lacking = scopes_user_lacks(db, visitor.user.id, checked.scopes)
    if lacking:  # api.md 5.1.3: an invalid-request error, and no redirect
        return _invalid_request(
            request,
            visitor,
            message=f"{checked.application_name} asks for permissions that your account "
            "does not have, so you cannot grant them.",
            lacking=lacking,
        )
    if checked.sensitive_scopes and second_factor_missing(request, visitor):
        return to_second_factor_set_up()
    if decision == "authorize":
        return RedirectResponse(
            approve(db, visitor.actor, checked, visitor.user.id, issuer), status_code=303
        )
    if decision == "deny":
        return RedirectResponse(deny(db, visitor.actor, checked, issuer), status_code=303)
    return _consent_screen(request, visitor, checked, params)


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
