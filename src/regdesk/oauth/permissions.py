"""Permissions a user may hold (decisions.md, Scopes): `admin`, which holds every one; the
name of each sensitive scope, which a user may grant an application only while holding the
permission of the same name (the scope registry decides which scopes are sensitive); and the
permissions that open a part of the site to staff who are not administrators (`PAGES`).
Whoever holds any of them is staff (REGDESK_STAFF_2FA).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from regdesk.oauth.models import UserPermission
from regdesk.oauth.scopes import SCOPES

ADMIN = "admin"
DESK = "registration:desk"
# Permissions that open pages, not scopes: each with what it allows, in words.
PAGES: dict[str, str] = {
    DESK: "Work the registration desk: find attendees, take payments at the desk, check them in",
}
PERMISSIONS: frozenset[str] = frozenset(
    {ADMIN, *PAGES, *(s.name for s in SCOPES.values() if s.sensitive)}
)


def described(name: str) -> str:
    """What a permission other than `admin` allows, in words."""
    return PAGES[name] if name in PAGES else SCOPES[name].description


def is_staff_permission(name: str) -> bool:
    return name in PERMISSIONS


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
