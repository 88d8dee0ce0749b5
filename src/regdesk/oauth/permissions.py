"""Permissions a user may hold (decisions.md, Scopes): `admin`, which holds every one, and the
name of each sensitive scope, which a user may grant an application only while holding the
permission of the same name. The scope registry decides which scopes are sensitive.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from regdesk.oauth.models import UserPermission
from regdesk.oauth.scopes import SCOPES

ADMIN = "admin"
PERMISSIONS: frozenset[str] = frozenset({ADMIN, *(s.name for s in SCOPES.values() if s.sensitive)})


def check_permission(name: str) -> str:
    if name not in PERMISSIONS:
        raise ValueError(f"unknown permission {name!r}; known: {', '.join(sorted(PERMISSIONS))}")
    return name


def permissions_of(session: Session | Connection, user_id: int) -> list[str]:
    """The permissions the user holds, by name."""
    return list(
        session.scalars(
            select(UserPermission.name)
            .where(UserPermission.user_id == user_id)
            .order_by(UserPermission.name)
        )
    )
