"""Throttling of failed logins (ASVS V2.2.1; decisions.md, Limits): it slows a guesser down
without handing anyone a switch that locks somebody else out.

Whom a failed attempt is counted against, within `WINDOW`:
- a trusted browser (one that signed in to the account it names before: accounts/devices.py): its
  own budget for that account, `PER_DEVICE`, and nothing else. Nothing a stranger does, from
  anywhere, spends it: the owner at their usual browser always gets in.
- any other browser:
  - the pair of what was typed and the address it came from, `PER_PAIR`: a guesser at one
    address gets that many tries at one login, and the owner elsewhere is not touched;
  - what was typed, from every address, `PER_LOGIN`: a guesser spread over many addresses;
  - the address, whatever was typed, `PER_ADDRESS`: a spray of one password over many
    accounts. A venue's attendees share one address, so this is set far above what their
    typos make (each success forgives its own), and it only holds up browsers that have not
    signed in before.
Counts go by what was TYPED (case aside), never by the account it names: the answer to a login
then depends only on what was sent with that very login, so the throttle cannot tell anyone
which e-mail belongs to which username, nor whether an account exists (an unknown login is
throttled exactly like a known one).

Past a limit, the form answers 429 without checking the password, until the oldest counted
failure leaves the window. A success forgives the failures it explains: those of its own
browser, or, for a browser not yet trusted, those of the account's username and e-mail from
that address. Failures are rows in the database, so the limits hold across every process.

Requests for a password-reset link (/password/forgot) are counted in the same rows, under keys
of their own (they never spend a login's budget, nor a login theirs): per what was typed,
RESET_PER_LOGIN, so that nobody floods a mailbox; per address, RESET_PER_ADDRESS. As with
logins, what was typed is counted whether an account answers to it or not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Integer,
    Select,
    Subquery,
    bindparam,
    delete,
    insert,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import Session

from regdesk.accounts.devices import Device
from regdesk.accounts.models import LoginFailure
from regdesk.db import is_sqlite, utcnow
from regdesk.ratelimit import address_key

WINDOW = dt.timedelta(minutes=15)
PER_DEVICE = 10
PER_PAIR = 5
PER_LOGIN = 20
PER_ADDRESS = 100
RESET_PER_LOGIN = 3
RESET_PER_ADDRESS = 30
SIGNUP_PER_ADDRESS = 10
# PostgreSQL advisory-lock classes: one attempt per login, per address, per device at a time,
# so that concurrent guesses cannot all pass the count before any is recorded.
_LOGIN_LOCK, _ADDRESS_LOCK, _DEVICE_LOCK = 0x72640001, 0x72640002, 0x72640003


@dataclass(frozen=True)
class Attempt:
    """Who one login attempt is counted against."""

    login_key: str
    address_key: str
    device_key: str | None  # a trusted browser's, else None

    @property
    def trusted(self) -> bool:
        return self.device_key is not None


def attempt(login: str, address: str | None, device: Device | None) -> Attempt:
    return Attempt(
        login_key(login),
        _digest(f"address:{address_key(address)}"),
        device.key if device is not None else None,
    )


def second_factor_attempt(user_id: int, address: str | None, device: Device | None) -> Attempt:
    """A code typed at the second step of signing in (accounts.md, Second factor): counted as
    a failed login is, under the account (its password was right, so it is known)."""
    return Attempt(
        _digest(f"second factor:{user_id}"),
        _digest(f"address:{address_key(address)}"),
        device.key if device is not None else None,
    )


def login_key(login: str) -> str:
    """What a login is counted under: what was typed, whatever its case (a digest: what was
    typed is sometimes a password)."""
    return _digest(f"login:{login.casefold()}")


def lock(db: Session, attempt: Attempt) -> None:
    """Serialise attempts on the same login, address and device until this transaction ends.

    SQLite needs nothing: a write transaction there already holds the database's one lock.
    """
    if is_sqlite(db):
        return
    keys = [(_LOGIN_LOCK, attempt.login_key), (_ADDRESS_LOCK, attempt.address_key)]
    if attempt.device_key is not None:
        keys = [(_DEVICE_LOCK, attempt.device_key)]
    for lock_class, key in keys:
        db.execute(
            text("SELECT pg_advisory_xact_lock(:class, :key)"),
            {"class": _signed32(lock_class), "key": _signed32(int(key[:8], 16))},
        )


def retry_after(db: Session, attempt: Attempt) -> int | None:
    """Seconds until another attempt is allowed, or None when one is allowed now."""
    if attempt.device_key is not None:
        return _longest_wait(db, _TRUSTED, device=attempt.device_key, per_device=PER_DEVICE)
    return _longest_wait(
        db,
        _UNTRUSTED,
        login=attempt.login_key,
        address=attempt.address_key,
        per_pair=PER_PAIR,
        per_login=PER_LOGIN,
        per_address=PER_ADDRESS,
    )


def record_failure(db: Session, attempt: Attempt) -> None:
    now = utcnow()
    # What has left the window can never count again.
    db.execute(delete(LoginFailure).where(LoginFailure.occurred_at <= now - WINDOW))
    db.execute(
        insert(LoginFailure).values(
            occurred_at=now,
            login_key=attempt.login_key,
            address_key=attempt.address_key,
            device_key=attempt.device_key,
        )
    )


def forgive(db: Session, attempt: Attempt, logins: Iterable[str]) -> None:
    """After a success as the account whose logins (username, e-mail) are `logins`: the
    failures it explains no longer count (see the module's docstring)."""
    if attempt.device_key is not None:
        which = LoginFailure.device_key == attempt.device_key
    else:
        which = (
            LoginFailure.login_key.in_([attempt.login_key, *map(login_key, logins)])
            & (LoginFailure.address_key == attempt.address_key)
            & LoginFailure.device_key.is_(None)
        )
    db.execute(delete(LoginFailure).where(which))


def link_request_allowed(db: Session, login: str, address: str | None) -> bool:
    """Whether a link may be mailed for `login` (what was typed on /password/forgot; a user's
    own key for a verification link sent again), at a request from `address`: if so, the
    request is counted (in the caller's transaction); if not, nothing is."""
    request = Attempt(
        _digest(f"reset:{login.casefold()}"), _digest(f"reset from:{address_key(address)}"), None
    )
    lock(db, request)
    wait = _longest_wait(
        db,
        _RESET,
        login=request.login_key,
        address=request.address_key,
        per_login=RESET_PER_LOGIN,
        per_address=RESET_PER_ADDRESS,
    )
    if wait is not None:
        return False
    record_failure(db, request)
    return True


def signup_allowed(db: Session, address: str | None) -> bool:
    """Whether a sign-up form from `address` may be tried now (SIGNUP_PER_ADDRESS in the
    window, whatever came of them: each says whether an address is taken); if so, it is
    counted (in the caller's transaction); if not, nothing is."""
    request = Attempt(_digest("signup"), _digest(f"signup from:{address_key(address)}"), None)
    lock(db, request)
    wait = _longest_wait(db, _SIGNUP, address=request.address_key, per_address=SIGNUP_PER_ADDRESS)
    if wait is not None:
        return False
    record_failure(db, request)
    return True


_Limits = CompoundSelect[dt.datetime] | Select[dt.datetime]


def _longest_wait(db: Session, limits: _Limits, **bound: Any) -> int | None:
    """Seconds until none of `limits` is full (one of the statements below, with its keys and
    limits bound); None: none is now."""
    now = utcnow()
    oldest_counted: list[dt.datetime] = list(db.scalars(limits, {"since": now - WINDOW, **bound}))
    if not oldest_counted:
        return None
    return max(1, math.ceil((max(oldest_counted) + WINDOW - now).total_seconds()))


def _full(which: ColumnElement[bool], limit: str) -> Subquery:
    """The failure that fills the limit bound as `limit` among `which`: the limit-th most recent
    in the window (once it leaves, one more attempt is free); none while the limit is not full."""
    return (
        select(LoginFailure.occurred_at)
        .where(which, LoginFailure.occurred_at > bindparam("since"))
        .order_by(LoginFailure.occurred_at.desc())
        .offset(bindparam(limit, type_=Integer) - 1)
        .limit(1)
        .subquery()
    )


def _any_full(*full: Subquery) -> _Limits:
    """One statement for every limit of an attempt: built once, its keys and limits bound at
    each attempt. Built at each attempt, the three of a login were a third of its time."""
    parts = [select(part.c.occurred_at) for part in full]
    return parts[0] if len(parts) == 1 else union_all(*parts)


_login = LoginFailure.login_key == bindparam("login")
_address = LoginFailure.address_key == bindparam("address")
_untrusted = LoginFailure.device_key.is_(None)
_TRUSTED = _any_full(_full(LoginFailure.device_key == bindparam("device"), "per_device"))
_UNTRUSTED = _any_full(
    _full(_login & _address & _untrusted, "per_pair"),
    _full(_login & _untrusted, "per_login"),
    _full(_address & _untrusted, "per_address"),
)
_RESET = _any_full(_full(_login, "per_login"), _full(_address, "per_address"))
_SIGNUP = _any_full(_full(_address, "per_address"))


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
