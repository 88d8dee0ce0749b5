"""Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a browser
that has signed in to an account before keeps a failure budget of its own for that account,
which nothing a stranger does can spend (accounts/throttle.py).

The cookie holds, signed with the instance's secret key (itsdangerous), one entry per account
signed in from this browser (a desk laptop is shared): the account's id, a random nonce that
names this browser for that account, and a tag of the account's password hash, so that a
password change (an administrator's reset after a takeover) ends the trust of every browser
that knew the old one. It is sent only to the login form.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass

from fastapi import Request, Response
from itsdangerous import BadData, URLSafeTimedSerializer

from regdesk.security import new_secret
from regdesk.users.models import User

COOKIE = "regdesk_device"
LIFETIME = dt.timedelta(days=365)
MAX_ACCOUNTS = 5  # the most recent sign-ins a browser remembers
_PATH = "/login"


@dataclass(frozen=True)
class Device:
    """This browser, as trusted for one account."""

    user_id: int
    nonce: str

    @property
    def key(self) -> str:
        """What its failures are counted against: a digest, never the cookie's value."""
        return hashlib.sha256(f"device:{self.user_id}:{self.nonce}".encode()).hexdigest()


Entry = tuple[int, str, str]  # user id, nonce, password tag


def trusted_device(request: Request, user: User | None) -> Device | None:
    """This browser, if it signed in to `user`'s account before, since its last password."""
    if user is None or not user.password_hash:
        return None
    tag = _password_tag(request, user.password_hash)
    for user_id, nonce, entry_tag in _entries(request):
        if user_id == user.id and hmac.compare_digest(entry_tag, tag):
            return Device(user_id, nonce)
    return None


def remember(response: Response, request: Request, user: User) -> None:
    """After a sign-in: this browser is trusted for `user` (a new nonce), and still for the
    other accounts it remembers."""
    if not user.password_hash:
        return
    entry: Entry = (user.id, new_secret(16), _password_tag(request, user.password_hash))
    others = [e for e in _entries(request) if e[0] != user.id]
    value = _serializer(request).dumps([list(entry), *map(list, others[: MAX_ACCOUNTS - 1])])
    response.set_cookie(
        COOKIE,
        value,
        max_age=int(LIFETIME.total_seconds()),
        path=_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def _entries(request: Request) -> list[Entry]:
    value = request.cookies.get(COOKIE)
    if not value or len(value) > 4096:
        return []
    try:
        found = _serializer(request).loads(value, max_age=int(LIFETIME.total_seconds()))
    except BadData:
        return []
    if not isinstance(found, list):
        return []
    return [
        (entry[0], entry[1], entry[2])
        for entry in found
        if isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], int)
        and all(isinstance(part, str) for part in entry[1:])
    ]


def _serializer(request: Request) -> URLSafeTimedSerializer:
    key: str = request.app.state.secret_key
    return URLSafeTimedSerializer(key, salt="regdesk device cookie")


def _password_tag(request: Request, password_hash: str) -> str:
    key: str = request.app.state.secret_key
    message = f"regdesk device|{password_hash}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()[:32]
