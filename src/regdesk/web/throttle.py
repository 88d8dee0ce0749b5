"""Throttling of failed logins, per account and per client address (decisions.md, Limits).

Failures are rows in the database, so the limits hold across every server process. Past
`PER_ACCOUNT` failures for one account, or `PER_ADDRESS` from one address, within `WINDOW`,
the form answers 429 without even checking the password, until the oldest counted failure
leaves the window. A success forgives only the failures of that account from that address:
an attacker elsewhere keeps their count.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import math
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, insert, select, text
from sqlalchemy.orm import Session

from regdesk.db import is_sqlite, utcnow
from regdesk.web.models import LoginFailure

WINDOW = dt.timedelta(minutes=15)
PER_ACCOUNT = 5
# A convention's attendees share one public address on the venue's Wi-Fi: the per-account
# limit stops guessing; the per-address one only has to stop a spray across accounts.
PER_ADDRESS = 100
# PostgreSQL advisory-lock classes: one login attempt per account (and per address) at a time,
# so that concurrent guesses cannot all pass the count before any is recorded.
_ACCOUNT_LOCK, _ADDRESS_LOCK = 0x72640001, 0x72640002


@dataclass(frozen=True)
class Attempt:
    """Who a login attempt is counted against."""

    account_key: str
    address_key: str


def attempt(login: str, user_id: int | None, address: str | None) -> Attempt:
    """An attempt on the account `user_id` (or, when the login names none, on what was typed:
    unknown accounts are throttled alike, so the 429 tells nothing about who exists)."""
    account = f"user:{user_id}" if user_id is not None else f"login:{login.casefold()}"
    return Attempt(_digest(account), _digest(f"address:{address_key(address)}"))


def address_key(address: str | None) -> str:
    """The address an attempt is counted against: an IPv6 client's whole /64, which one
    subscriber usually holds, else the address as given."""
    if not address:
        return "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def lock(db: Session, attempt: Attempt) -> None:
    """Serialise attempts on the same account and address until this transaction ends.

    SQLite needs nothing: a write transaction there already holds the database's one lock.
    """
    if is_sqlite(db):
        return
    for lock_class, key in (
        (_ACCOUNT_LOCK, attempt.account_key),
        (_ADDRESS_LOCK, attempt.address_key),
    ):
        db.execute(
            text("SELECT pg_advisory_xact_lock(:class, :key)"),
            {"class": _signed32(lock_class), "key": _signed32(int(key[:8], 16))},
        )


def retry_after(db: Session, attempt: Attempt) -> int | None:
    """Seconds until another attempt is allowed, or None when one is allowed now."""
    now = utcnow()
    waits = [
        _wait(db, LoginFailure.account_key == attempt.account_key, PER_ACCOUNT, now),
        _wait(db, LoginFailure.address_key == attempt.address_key, PER_ADDRESS, now),
    ]
    longest = max((w for w in waits if w is not None), default=None)
    return None if longest is None else max(1, math.ceil(longest.total_seconds()))


def record_failure(db: Session, attempt: Attempt) -> None:
    now = utcnow()
    # What has left the window can never count again.
    db.execute(delete(LoginFailure).where(LoginFailure.occurred_at <= now - WINDOW))
    db.execute(
        insert(LoginFailure).values(
            occurred_at=now, account_key=attempt.account_key, address_key=attempt.address_key
        )
    )


def forgive(db: Session, attempt: Attempt) -> None:
    """After a success: this account's failures from this address no longer count."""
    db.execute(
        delete(LoginFailure).where(
            LoginFailure.account_key == attempt.account_key,
            LoginFailure.address_key == attempt.address_key,
        )
    )


def _wait(
    db: Session, which: ColumnElement[bool], limit: int, now: dt.datetime
) -> dt.timedelta | None:
    # The limit-th most recent failure in the window: once it leaves, one more attempt is free.
    oldest_counted = db.scalars(
        select(LoginFailure.occurred_at)
        .where(which, LoginFailure.occurred_at > now - WINDOW)
        .order_by(LoginFailure.occurred_at.desc())
        .offset(limit - 1)
        .limit(1)
    ).first()
    if oldest_counted is None:
        return None
    return oldest_counted + WINDOW - now


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
