"""Roles and who holds them."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Row, delete, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_event
from regdesk.db import upsert_ignore, utcnow
from regdesk.roles.models import Role, UserRole

ROLES = Role.__table__


def list_roles(session: Session, after_id: int, limit: int) -> tuple[list[Row[Any]], bool]:
    rows = list(
        session.execute(
            select(ROLES).where(ROLES.c.id > after_id).order_by(ROLES.c.id).limit(limit + 1)
        )
    )
    return rows[:limit], len(rows) > limit


def get_role(session: Session, role_id: int) -> Row[Any] | None:
    return session.execute(select(ROLES).where(ROLES.c.id == role_id)).first()


def roles_of(session: Session, user_id: int) -> list[Row[Any]]:
    return list(
        session.execute(
            select(Role.id, Role.name, UserRole.scope)
            .join(UserRole, UserRole.role_id == Role.id)
            .where(UserRole.user_id == user_id)
            .order_by(Role.id)
        )
    )


def assign_role(
    session: Session, actor: Actor, user_id: int, role: Row[Any], scope: str
) -> Row[Any]:
    """Give the user the role with this scope (idempotent); returns {id, name, scope}."""
    held = session.get(UserRole, (user_id, role.id))
    if held is None:
        # A concurrent PUT of the same role may win the insert: then there is nothing to do.
        upsert_ignore(
            session,
            UserRole.__table__,
            {"user_id": user_id, "role_id": role.id, "scope": scope, "created_at": utcnow()},
        )
    elif held.scope != scope:
        held.scope = scope
    else:
        return next(r for r in roles_of(session, user_id) if r.id == role.id)
    record_event(
        session,
        actor,
        "user.role_assigned",
        target_type="user",
        target_id=user_id,
        details={"role": role.name, "scope": scope},
    )
    session.flush()
    return next(r for r in roles_of(session, user_id) if r.id == role.id)


def remove_role(session: Session, actor: Actor, user_id: int, role: Row[Any]) -> None:
    """Take the role away (nothing to do when the user does not hold it)."""
    result = session.execute(
        delete(UserRole).where(UserRole.user_id == user_id, UserRole.role_id == role.id)
    )
    if cast(CursorResult[Any], result).rowcount:
        record_event(
            session,
            actor,
            "user.role_removed",
            target_type="user",
            target_id=user_id,
            details={"role": role.name},
        )
