"""The second step of signing in (accounts.md, Second factor): after a right password for an
account with a second factor, /login/second-factor asks for a code from the authenticator
app or a recovery code, or /login/second-factor/security-key for a security key (WebAuthn,
security_keys.py); only then does the session start. Wrong codes and refused keys are failed
logins for the throttle (throttle.py), under the account; a code or a challenge is good once."""

from __future__ import annotations

from typing import TypedDict

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from regdesk.accounts import throttle
from regdesk.accounts.account_page import TextField
from regdesk.accounts.devices import trusted_device
from regdesk.accounts.factors import (
    check_totp,
    security_keys_of,
    totp_factor,
    use_recovery_code,
)
from regdesk.accounts.security_keys import authentication_options, check_security_key
from regdesk.accounts.sign_in import (
    SECOND_STEP_PATH,
    PendingLogin,
    pending_login,
    signed_in_response,
)
from regdesk.audit.service import Actor, record_event
from regdesk.deps import IssuerDep
from regdesk.web import csrf
from regdesk.web.headers import SCRIPT_POLICY
from regdesk.web.pages import render
from regdesk.web.visitor import PageDb, VisitorDep, client_address, forbidden, set_login_cookie

router = APIRouter(include_in_schema=False)

WRONG_CODE = "That code does not work. Type the code your app shows now, or a recovery code."
KEY_REFUSED = "That security key's answer did not work. Try again, or type a code instead."
MAX_CODE = 40
SECURITY_KEY_PATH = f"{SECOND_STEP_PATH}/security-key"  # under the pending login's cookie path


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
    held = _held_back(request, db, attempt)
    if held is not None:
        return _second_step_form(request, db, pending, **held)
    typed = code.strip()[:MAX_CODE]
    actor = Actor(label=f"user:{user.id}", user_id=user.id, ip_address=address)
    secret_key = request.app.state.secret_key
    if check_totp(db, user.id, typed, secret_key):
        used = "totp"
    elif use_recovery_code(db, actor, user, typed, site=site):
        used = "recovery_code"
    else:
        _failed(request, db, attempt, user.id, "wrong_second_factor")
        return _second_step_form(request, db, pending, error=WRONG_CODE, status_code=400)
    throttle.forgive(db, attempt, ())
    return signed_in_response(request, db, user, pending.target, second_factor=used)


@router.get(SECURITY_KEY_PATH)
def security_key_page(request: Request, db: PageDb, site: IssuerDep) -> Response:
    pending = pending_login(request, db)
    if pending is None:
        return RedirectResponse("/login", status_code=303)
    return _security_key_form(request, db, pending, site)


@router.post(SECURITY_KEY_PATH)
def security_key_step(
    request: Request,
    db: PageDb,
    visitor: VisitorDep,
    site: IssuerDep,
    csrf_token: TextField = "",
    credential: TextField = "",
) -> Response:
    """The browser's answer to navigator.credentials.get (webauthn.js): signs in as a code
    does, and a refused answer counts against the throttle as a wrong code."""
    if not csrf.login_form_is_genuine(request, csrf_token):
        return forbidden(request, visitor)
    pending = pending_login(request, db)
    if pending is None:
        return RedirectResponse("/login", status_code=303)
    user = pending.user
    attempt = throttle.second_factor_attempt(
        user.id, client_address(request), trusted_device(request, user)
    )
    held = _held_back(request, db, attempt)
    if held is not None:
        return _security_key_form(request, db, pending, site, **held)
    if not check_security_key(db, user, credential, issuer=site):
        _failed(request, db, attempt, user.id, "wrong_security_key")
        return _security_key_form(request, db, pending, site, error=KEY_REFUSED, status_code=400)
    throttle.forgive(db, attempt, ())
    return signed_in_response(request, db, user, pending.target, second_factor="security_key")


# --- what both forms share -------------------------------------------------------------------


class _Held(TypedDict):
    error: str
    status_code: int
    headers: dict[str, str]


def _held_back(request: Request, db: PageDb, attempt: throttle.Attempt) -> _Held | None:
    """Too many wrong answers lately: what the form says (429), else None."""
    if request.app.state.settings.rate_limits != "on":
        return None
    throttle.lock(db, attempt)  # concurrent guesses counted one by one
    wait = throttle.retry_after(db, attempt)
    if wait is None:
        return None
    minutes = -(-wait // 60)
    error = (
        f"Too many wrong codes. Please wait {minutes} "
        f"minute{'s' if minutes != 1 else ''} and try again."
    )
    return {"error": error, "status_code": 429, "headers": {"Retry-After": str(wait)}}


def _failed(
    request: Request, db: PageDb, attempt: throttle.Attempt, user_id: int, reason: str
) -> None:
    throttle.record_failure(db, attempt)
    record_event(
        db,
        Actor(label="anonymous", ip_address=client_address(request)),
        "user.login_failed",
        target_type="user",
        target_id=user_id,
        details={"reason": reason},
    )


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
            "has_keys": bool(security_keys_of(db, pending.user.id)),
            "error": error,
        },
        status_code=status_code,
        headers=headers,
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response


def _security_key_form(
    request: Request,
    db: PageDb,
    pending: PendingLogin,
    site: str,
    *,
    error: str | None = None,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    """The page that asks for a key, with a new challenge; the code form when there is no key."""
    options = authentication_options(db, pending.user, site)
    if options is None:
        return RedirectResponse(SECOND_STEP_PATH, status_code=303)
    nonce, fresh = csrf.login_nonce(request)
    response = render(
        request,
        "login_security_key.html",
        {
            "visitor": None,
            "login_token": csrf.login_token(request, nonce),
            "options": options,
            "error": error,
        },
        status_code=status_code,
        headers={**(headers or {}), "Content-Security-Policy": SCRIPT_POLICY},
    )
    if fresh:
        set_login_cookie(response, request, nonce)
    return response
