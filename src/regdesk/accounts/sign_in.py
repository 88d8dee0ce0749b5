"""What the login form (pages.py) and its second step (second_step_pages.py) share: the
session that starts once a person has proved who they are, and the pending login between a
right password and a second factor (accounts.md, Second factor).

A pending login is no session: it is a cookie signed with the instance's secret key that
names the account for `PENDING_LIFETIME`, bound to this browser (to its login-form cookie,
web/csrf.py, which a copied pending cookie does not bring along) and to the account's
password (a new password ends it). It opens only the second step's page.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass

from fastapi import Request, Response
from fastapi.responses import RedirectResponse
from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from regdesk.accounts.devices import remember as remember_device
from regdesk.audit.service import Actor, record_event
from regdesk.users.models import User
from regdesk.web import csrf
from regdesk.web.sessions import COOKIE_NAME, end_session, start_session
from regdesk.web.visitor import client_address, set_session_cookie

PENDING_COOKIE = "regdesk_pending_login"
PENDING_LIFETIME = dt.timedelta(minutes=5)
SECOND_STEP_PATH = "/login/second-factor"


def signed_in_response(
    request: Request, db: Session, user: User, target: str | None, **details: object
) -> Response:
    """The person proved who they are: a new session (a session id planted beforehand signs
    no one in), the `user.login` event, and on to `target`."""
    end_session(db, request.cookies.get(COOKIE_NAME))
    address = client_address(request)
    live = start_session(
        db, user.id, ip_address=address, user_agent=request.headers.get("user-agent")
    )
    actor = Actor(label=f"user:{user.id}", user_id=user.id, ip_address=address)
    record_event(
        db, actor, "user.login", target_type="user", target_id=user.id, details=details or None
    )
    response = RedirectResponse(target or "/account", status_code=303)
    set_session_cookie(response, request, live.session_id)
    remember_device(response, request, user)
    if PENDING_COOKIE in request.cookies:
        clear_pending_login(response, request)
    return response


# --- the pending login -----------------------------------------------------------------------


@dataclass(frozen=True)
class PendingLogin:
    user: User
    target: str | None


def pending_login_response(request: Request, user: User, target: str | None) -> Response:
    """A right password for an account with a second factor: on to the second step."""
    response = RedirectResponse(SECOND_STEP_PATH, status_code=303)
    value = _serializer(request).dumps(
        [user.id, target or "", _browser_tag(request), _password_tag(request, user)]
    )
    response.set_cookie(
        PENDING_COOKIE,
        value,
        max_age=int(PENDING_LIFETIME.total_seconds()),
        path=SECOND_STEP_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


def pending_login(request: Request, db: Session) -> PendingLogin | None:
    """The login this browser began, while it stands; None when there is none (or no more)."""
    value = request.cookies.get(PENDING_COOKIE)
    if not value or len(value) > 2048:
        return None
    try:
        found = _serializer(request).loads(value, max_age=int(PENDING_LIFETIME.total_seconds()))
    except BadData:
        return None
    if not (isinstance(found, list) and len(found) == 4 and isinstance(found[0], int)):
        return None
    user_id, target, browser, password = found
    if not hmac.compare_digest(str(browser), _browser_tag(request)):
        return None
    user = db.get(User, user_id)
    if user is None or not hmac.compare_digest(str(password), _password_tag(request, user)):
        return None
    return PendingLogin(user, str(target) or None)


def clear_pending_login(response: Response, request: Request) -> None:
    response.delete_cookie(
        PENDING_COOKIE,
        path=SECOND_STEP_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def _serializer(request: Request) -> URLSafeTimedSerializer:
    key: str = request.app.state.secret_key
    return URLSafeTimedSerializer(key, salt="regdesk pending login")


def _browser_tag(request: Request) -> str:
    """This browser's login-form cookie, by its digest ('' without one: then nothing matches
    a tag made with one, and the login form sets one before any password is sent)."""
    nonce = request.cookies.get(csrf.LOGIN_COOKIE, "")
    return hashlib.sha256(f"regdesk pending login|{nonce}".encode()).hexdigest()


def _password_tag(request: Request, user: User) -> str:
    key: str = request.app.state.secret_key
    message = f"regdesk pending login|{user.id}|{user.password_hash}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()[:32]
