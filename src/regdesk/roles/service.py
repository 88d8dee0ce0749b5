"""Roles and who holds them."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Row, delete, func, select
from sqlalchemy.orm import Session

from regdesk.audit.service import Actor, record_changes, record_event
from regdesk.db import table_of, upsert_ignore, utcnow
from regdesk.errors import Invalid
from regdesk.fields import text
from regdesk.roles.models import Role, UserRole

ROLES = table_of(Role)


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


# --- the admin area: roles themselves ---------------------------------------------------------

# The import's rule for a role's name (transfer/validation.py), so both refuse the same input.
_NAME = text(ROLES.c.name, nonempty=True)


def all_roles(session: Session) -> list[Role]:
    """Every role, by name (roles are few: a page shows them all)."""
    return list(session.scalars(select(Role).order_by(Role.name)))


def holder_counts(session: Session) -> dict[int, int]:
    """How many users hold each role (read off the user_roles index, grouped)."""
    counts = select(UserRole.role_id, func.count()).group_by(UserRole.role_id)
    return {row[0]: row[1] for row in session.execute(counts)}


def holder_count(session: Session, role_id: int) -> int:
    count = select(func.count()).select_from(UserRole).where(UserRole.role_id == role_id)
    return session.scalar(count) or 0


def _checked_name(session: Session, name: str, role_id: int | None) -> str:
    try:
        checked: str = _NAME(name.strip())
    except ValueError as exc:
        raise Invalid({"name": str(exc)}) from None
    # Names are unique; compared whatever their case, so "staff" is not a second "Staff".
    holder = session.scalar(select(Role.id).where(func.lower(Role.name) == func.lower(checked)))
    if holder is not None and holder != role_id:
        raise Invalid({"name": f"there is already a role named {checked!r}"})
    return checked


def create_role(session: Session, actor: Actor, name: str, *, staff: bool) -> Role:
    role = Role(name=_checked_name(session, name, None), staff=staff)
    session.add(role)
    session.flush()
    record_event(
        session,
        actor,
        "role.created",
        target_type="role",
        target_id=role.id,
        details={"name": role.name, "staff": staff},
    )
    return role


def update_role(
    session: Session,
    actor: Actor,
    role: Role,
    *,
    name: str | None = None,
    staff: bool | None = None,
) -> list[str]:
    """Renames the role and sets its staff flag (None: left alone); returns what changed.

    Holders of a staff role are `isStaff` in the volunteer records: the documents follow
    (the database's triggers queue every volunteer holding the role)."""
    wanted: dict[str, Any] = {}
    if name is not None:
        wanted["name"] = _checked_name(session, name, role.id)
    if staff is not None:
        wanted["staff"] = staff
    final = {"name": role.name, "staff": role.staff, **wanted}
    return record_changes(
        session, actor, role, wanted, action="role.updated", target_type="role", extra=final
    )


def delete_role(session: Session, actor: Actor, role: Role) -> int:
    """The role goes, and every holder loses it; returns how many held it."""
    result = session.execute(delete(UserRole).where(UserRole.role_id == role.id))
    holders = int(cast(CursorResult[Any], result).rowcount or 0)
    record_event(
        session,
        actor,
        "role.deleted",
        target_type="role",
        target_id=role.id,
        details={"name": role.name, "staff": role.staff, "holders": holders},
    )
    session.delete(role)
    session.flush()
    return holders
