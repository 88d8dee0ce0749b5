"""Checking a registration in (registrations.md, Pages; issue 17): once, whatever the number
of desks and scanners that try at the same moment.

The check-in is one conditional UPDATE (`... WHERE checked_in_at IS NULL`, and, unless an
administrator overrides, the order paid and the registration live): of several transactions
racing for one registration, on SQLite (one writer at a time) as on PostgreSQL (the row's lock,
the condition checked again once it is free), exactly one changes the row. The others read,
after it, who did it and when. Every check-in is an audit event naming the staff member; one
that needed an administrator's override is recorded as such.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, exists, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from regdesk.audit.service import Actor, record_event
from regdesk.db import utcnow
from regdesk.oauth.permissions import ADMIN, permissions_of
from regdesk.registrations.models import Order, OrderStatus, Registration
from regdesk.users.models import User


@dataclass(frozen=True)
class CheckIn:
    """When a registration was checked in, and by which staff member (None: deleted since)."""

    at: dt.datetime
    by_user_id: int | None
    by_name: str | None


class AlreadyCheckedIn(Exception):
    """Refused: checked in before (`earlier`: when and by whom)."""

    def __init__(self, earlier: CheckIn) -> None:
        super().__init__(f"already checked in at {earlier.at.isoformat()}")
        self.earlier = earlier


class NotCheckable(Exception):
    """Refused: the order is unpaid (`due`: the amount to take first), or cancelled or
    refunded; only an administrator's override checks it in."""

    def __init__(self, status: str, due: int) -> None:
        super().__init__(f"the order is {status}")
        self.status = status
        self.due = due if status == OrderStatus.UNPAID else 0


def check_in(
    session: Session, actor: Actor, registration: Registration, *, override: bool = False
) -> CheckIn:
    """Checks the registration in, now, by `actor` (a staff member). AlreadyCheckedIn when it
    was before; NotCheckable when its order is not paid (unless `override`, which only an
    administrator may ask: PermissionError otherwise)."""
    if override and not _is_admin(session, actor):
        raise PermissionError("only an administrator overrides the payment rule")
    now = utcnow()
    standing = _standing(session, registration.id)  # what the override, if any, overrode
    conditions = [Registration.id == registration.id, Registration.checked_in_at.is_(None)]
    if not override:
        conditions += [
            Registration.ended_at.is_(None),
            exists().where(Order.id == Registration.order_id, Order.status == OrderStatus.PAID),
        ]
    changed = session.execute(
        update(Registration)
        .where(*conditions)
        .values(checked_in_at=now, checked_in_by=actor.user_id, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if cast(CursorResult[Any], changed).rowcount != 1:
        raise _refusal(session, registration.id)
    for name, value in (("checked_in_at", now), ("checked_in_by", actor.user_id)):
        set_committed_value(registration, name, value)  # what the row now holds
    set_committed_value(registration, "updated_at", now)
    overridden = override and standing.status != OrderStatus.PAID
    record_event(
        session,
        actor,
        "registration.checked_in_by_override" if overridden else "registration.checked_in",
        target_type="registration",
        target_id=registration.id,
        details={
            "order": standing.number,
            "orderStatus": standing.status,
            "checkedInBy": actor.user_id,
        },
    )
    return CheckIn(now, actor.user_id, _staff_name(session, actor.user_id))


def earlier_check_in(session: Session, registration: Registration) -> CheckIn | None:
    """When and by whom the registration was checked in, if it was."""
    if registration.checked_in_at is None:
        return None
    by = registration.checked_in_by
    return CheckIn(registration.checked_in_at, by, _staff_name(session, by))


@dataclass(frozen=True)
class _Standing:
    number: str
    status: str
    amount: int
    checked_in_at: dt.datetime | None
    checked_in_by: int | None


def _standing(session: Session, registration_id: int) -> _Standing:
    row = session.execute(
        select(
            Order.number,
            Order.status,
            Order.amount,
            Registration.checked_in_at,
            Registration.checked_in_by,
        )
        .join(Order, Order.id == Registration.order_id)
        .where(Registration.id == registration_id)
    ).one()
    return _Standing(*row)


def _refusal(session: Session, registration_id: int) -> Exception:
    """Why the UPDATE changed nothing, read after it (after the winner, when one raced)."""
    standing = _standing(session, registration_id)
    if standing.checked_in_at is not None:
        by = standing.checked_in_by
        return AlreadyCheckedIn(CheckIn(standing.checked_in_at, by, _staff_name(session, by)))
    return NotCheckable(standing.status, standing.amount)


def _staff_name(session: Session, user_id: int | None) -> str | None:
    if user_id is None:
        return None
    row = session.execute(
        select(User.preferred_name, User.first_name, User.last_name, User.username).where(
            User.id == user_id
        )
    ).first()
    if row is None:
        return None
    preferred, first, last, username = row
    return f"{preferred or first} {last} ({username})"


def _is_admin(session: Session, actor: Actor) -> bool:
    return actor.user_id is not None and ADMIN in permissions_of(session, actor.user_id)
