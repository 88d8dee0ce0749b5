"""CSRF protection of every form (decisions.md, Cookies and CSRF).

Two kinds of hidden token, both an HMAC under the instance's secret key, so the server keeps
no extra state and every process agrees:

- Signed in (consent, account, logout): the synchronizer token HMAC(key, session id). The
  session id lives only in an HttpOnly cookie, and login gives a new one, so a token is good
  for one session and an attacker's page can neither read nor compute it.
- The login form, before there is any session: a signed double-submit cookie. The visitor gets
  a random `regdesk_csrf` cookie and the form carries HMAC(key, that value). A forged POST
  lacks the cookie's pairing token (the attacker can neither read the cookie nor sign a value
  of their own). We chose this over a pre-login session row so that anonymous visitors, bots
  included, never write to the database.

On top of the token, a POST whose browser says it comes from another site (`Sec-Fetch-Site:
cross-site` or `same-site`, the latter being a sibling subdomain that could have planted a
cookie) is refused. Browsers that do not send the header still meet the token.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from regdesk.security import new_secret

FIELD_NAME = "csrf_token"
LOGIN_COOKIE = "regdesk_csrf"
MAX_NONCE_LENGTH = 100
_FOREIGN_SITES = ("cross-site", "same-site")


def _sign(request: Request, purpose: str, value: str) -> str:
    key: str = request.app.state.secret_key
    message = f"regdesk-csrf|{purpose}|{value}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def session_token(request: Request, session_id: str) -> str:
    """The hidden field of every form a signed-in visitor sees."""
    return _sign(request, "session", session_id)


def login_nonce(request: Request) -> tuple[str, bool]:
    """The visitor's login-form cookie value, and whether it must be (re)set on the response."""
    nonce = request.cookies.get(LOGIN_COOKIE, "")
    if 20 <= len(nonce) <= MAX_NONCE_LENGTH:
        return nonce, False
    return new_secret(32), True


def login_token(request: Request, nonce: str) -> str:
    """The hidden field of the login form, paired with the `regdesk_csrf` cookie."""
    return _sign(request, "login", nonce)


def _matches(expected: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())


def _from_this_site(request: Request) -> bool:
    return request.headers.get("sec-fetch-site", "").lower() not in _FOREIGN_SITES


def session_form_is_genuine(request: Request, session_id: str, given: str | None) -> bool:
    return _from_this_site(request) and _matches(session_token(request, session_id), given)


def login_form_is_genuine(request: Request, given: str | None) -> bool:
    nonce = request.cookies.get(LOGIN_COOKIE, "")
    if not 20 <= len(nonce) <= MAX_NONCE_LENGTH:
        return False
    return _from_this_site(request) and _matches(login_token(request, nonce), given)
