"""The current-user record (api.md 2.4): the user's own columns, and what it adds about them
from the rest of the convention (roles, permissions, a volunteer application, leading).

The most called route of the tools acting for a user, so it reads on the event loop's own
connection (db.LoopReads), in one statement: the user's row (with the two yes-or-no facts),
then a row for each of their roles and permissions, told apart by the first column. On
PostgreSQL a statement is a round trip and most of a request's CPU is the driver's work on
each: as the two statements it was, it answered 14 % fewer requests a second
(docs/development/performance.md).
"""

from __future__ import annotations

import datetime as dt
import functools
from types import SimpleNamespace
from typing import Any

from regdesk.db.driver import LoopReads, Query
from regdesk.events.models import CURRENT_EVENT_ID
from regdesk.formats import as_json
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
# A held row's columns past its two: as many as the user's row has past its first two.
_FILLER = ", ".join(["NULL"] * len(_COLUMNS))
# Part 0 is the user (its columns, then the two facts), 1 a role (id, name), 2 a permission
# (name); in that order, roles by id, permissions by name.
_RECORD = Query(
    f"SELECT 0 AS part, {', '.join('u.' + c for c in _COLUMNS)},"  # noqa: S608 (ours, no input)
    " EXISTS (SELECT 1 FROM volunteers v"
    f"  WHERE v.user_id = u.id AND v.event_id = {CURRENT_EVENT_ID}),"
    " EXISTS (SELECT 1 FROM department_leads d WHERE d.user_id = u.id)"
    " FROM users u WHERE u.id = :user_id"
    f" UNION ALL SELECT 1, r.id, r.name, {_FILLER}"
    " FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = :user_id"
    f" UNION ALL SELECT 2, NULL, p.name, {_FILLER}"
    " FROM user_permissions p WHERE p.user_id = :user_id"
    " ORDER BY 1, 2, 3"
)


async def current_user_json(reads: LoopReads, user_id: int, scopes: frozenset[str]) -> bytes | None:
    """The record of the user with this id as a token with `scopes` sees it, in JSON (UTF-8,
    as Starlette's JSONResponse writes it); None: no such user.

    The record is a function of the rows read and the scopes alone, so its bytes are kept for
    the rows and scopes answered lately (`_ANSWERS_KEPT`), and made again only for rows not
    seen: the rows are read at every request, and a change, however made, changes them, so
    an answer is never stale. Kept, the route answers 12 % more requests a second (SQLite, one
    user asking again and again)."""
    return _answer(tuple(await reads.all(_RECORD, user_id=user_id)), scopes)


# Answers kept: their rows (about twenty values) and about a kilobyte of JSON each.
_ANSWERS_KEPT = 1024


@functools.lru_cache(maxsize=_ANSWERS_KEPT)
def _answer(rows: tuple[tuple[Any, ...], ...], scopes: frozenset[str]) -> bytes | None:
    record = _record(rows, scopes)
    return None if record is None else as_json(record).encode()


def _record(rows: tuple[tuple[Any, ...], ...], scopes: frozenset[str]) -> dict[str, Any] | None:
    if not rows or rows[0][0] != 0:
        return None
    row = rows[0][1:]
    user = SimpleNamespace(**dict(zip(_COLUMNS, row, strict=False)))
    # SQLite gives booleans as 0 and 1, and dates as text.
    for flag in ("verified", "newsletter", "identity_verified"):
        setattr(user, flag, bool(getattr(user, flag)))
    if isinstance(user.born_at, str):
        user.born_at = dt.date.fromisoformat(user.born_at)
    return render_current_user(
        user,
        scopes,
        is_volunteer=bool(row[len(_COLUMNS)]),
        is_department_lead=bool(row[len(_COLUMNS) + 1]),
        roles=[{"id": held[1], "name": held[2]} for held in rows if held[0] == 1],
        permissions=[held[2] for held in rows if held[0] == 2],
    )
