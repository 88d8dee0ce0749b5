"""The second step of signing in (accounts.md, Second factor): after a right password for an
account with a second factor, /login/second-factor asks for a code from the authenticator
app or a recovery code; only then does the session
start. Wrong codes are failed logins for the throttle (throttle.py), under the account; a
code is accepted once."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from regdesk.accounts import throttle
from regdesk.accounts.account_page import TextField
from regdesk.accounts.devices import trusted_device
from regdesk.accounts.factors import check_totp, totp_factor, use_recovery_code
from regdesk.accounts.sign_in import (
    SECOND_STEP_PATH,
    PendingLogin,
    pending_login,
    signed_in_response,
)
from regdesk.audit.service import Actor, record_event
from regdesk.deps import IssuerDep
from regdesk.web import csrf
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb, VisitorDep, client_address, forbidden, set_login_cookie

router = APIRouter(include_in_schema=False)

WRONG_CODE = "That code does not work. Type the code your app shows now, or a recovery code."
MAX_CODE = 40


@router.get(SECOND_STEP_PATH)
def second_step_page(request: Request, db: PageDb) -> Response:
    pending = pending_login(request, db)
    if pending is None:  # none begun, or its five minutes are over: the password again
        return RedirectResponse("/login", status_code=303)
    return _second_step_form(request, db, pending)


@router.post(SECOND_STEP_PATH)
def second_step(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    code: TextField = "",
) -> Response:
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    pending = pending_login(request, db)
    if pending is None:
        return RedirectResponse("/login", status_code=303)
    user = pending.user
    address = client_address(request)
    attempt = throttle.second_factor_attempt(user.id, address, trusted_device(request, user))
    if request.app.state.settings.rate_limits == "on":
        throttle.lock(db, attempt)  # concurrent guesses counted one by one
        wait = throttle.retry_after(db, attempt)
        if wait is not None:
            minutes = -(-wait // 60)
            error = (
                f"Too many wrong codes. Please wait {minutes} "
                f"minute{'s' if minutes != 1 else ''} and try again."
            )
            return _second_step_form(
                request,
                db,
                pending,
                error=error,
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
    typed = code.strip()[:MAX_CODE]
    actor = Actor(label=f"user:{user.id}", user_id=user.id, ip_address=address)
    secret_key = request.app.state.secret_key
    if check_totp(db, user.id, typed, secret_key):
        used = "totp"
    elif use_recovery_code(db, actor, user, typed, site=site):
        used = "recovery_code"
    else:
        throttle.record_failure(db, attempt)
        record_event(
            db,
            Actor(label="anonymous", ip_address=address),
            "user.login_failed",
            target_type="user",
            target_id=user.id,
            details={"reason": "wrong_second_factor"},
        )
        return _second_step_form(request, db, pending, error=WRONG_CODE, status_code=400)
    throttle.forgive(db, attempt, ())
    return signed_in_response(request, db, user, pending.target, second_factor=used)


def _second_step_form(
    request: Request,
    db: PageDb,
    pending: PendingLogin,
    *,
    error: str | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    app = totp_factor(db, pending.user.id)
    nonce, fresh = csrf.login_nonce(request)
    response = render(
        request,
        "login_second_factor.html",
        {
            "visitor": None,
            "login_token": csrf.login_token(request, nonce),
            "has_app": app is not None and app.confirmed_at is not None,
            "error": error,
        },
        status_code=status_code,
        headers=headers,
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response
