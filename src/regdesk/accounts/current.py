"""The current-user record (api.md 2.4): the user's own columns, and what it adds about them
from the rest of the convention (roles, permissions, a volunteer application, leading).

The most called route of the tools acting for a user, so it reads on the event loop's own
connection (db.LoopReads), in two statements: the user with the two yes-or-no facts, then
their roles and permissions together.
"""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

from regdesk.db.driver import LoopReads, Query
from regdesk.users.schemas import ADDRESS_FIELDS, render_current_user

_COLUMNS = (
    "id",
    "username",
    "first_name",
    "last_name",
    "preferred_name",
    "email",
    "verified",
    "phone",
    *(column for _, column in ADDRESS_FIELDS),
    "born_at",
    "newsletter",
    "identity_verified",
    "profile_picture_url",
)
_USER = Query(
    f"SELECT {', '.join('u.' + c for c in _COLUMNS)},"  # noqa: S608 (ours, no input)
    " EXISTS (SELECT 1 FROM volunteers v JOIN events e ON e.id = v.event_id"
    "  WHERE v.user_id = u.id AND e.is_current),"
    " EXISTS (SELECT 1 FROM department_leads d WHERE d.user_id = u.id)"
    " FROM users u WHERE u.id = :user_id"
)
# Roles by id, then permissions by name ('permission' sorts before 'role': hence the order).
_HELD = Query(
    "SELECT 'role' AS kind, r.id, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id"
    " WHERE ur.user_id = :user_id"
    " UNION ALL"
    " SELECT 'permission' AS kind, NULL, p.name FROM user_permissions p"
    " WHERE p.user_id = :user_id"
    " ORDER BY 1 DESC, 2, 3"
)


async def current_user_record(
    reads: LoopReads, user_id: int, scopes: frozenset[str]
) -> dict[str, Any] | None:
    """The record of the user with this id as a token with `scopes` sees it; None: no such
    user."""
    row = await reads.first(_USER, user_id=user_id)
    if row is None:
        return None
    user = SimpleNamespace(**dict(zip(_COLUMNS, row, strict=False)))
    # SQLite gives booleans as 0 and 1, and dates as text.
    for flag in ("verified", "newsletter", "identity_verified"):
        setattr(user, flag, bool(getattr(user, flag)))
    if isinstance(user.born_at, str):
        user.born_at = dt.date.fromisoformat(user.born_at)
    held = await reads.all(_HELD, user_id=user_id)
    return render_current_user(
        user,
        scopes,
        is_volunteer=bool(row[len(_COLUMNS)]),
        is_department_lead=bool(row[len(_COLUMNS) + 1]),
        roles=[{"id": id, "name": name} for kind, id, name in held if kind == "role"],
        permissions=[name for kind, _, name in held if kind == "permission"],
    )
